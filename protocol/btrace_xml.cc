#include "protocol/btrace_xml.h"

#include <algorithm>

#include "protocol/replies.h"

namespace protocol {

namespace {

constexpr std::string_view kBtraceHeader =
    "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n";
constexpr std::string_view kBtraceFooter = "</btrace>\n";


}  // namespace

std::optional<BtraceRead> parse_btrace_annex(std::string_view annex) {
  if (annex == "all") return BtraceRead::All;
  if (annex == "new") return BtraceRead::New;
  if (annex == "delta") return BtraceRead::Delta;
  return std::nullopt;
}

std::string_view btrace_xml_header() { return kBtraceHeader; }
std::string_view btrace_xml_footer() { return kBtraceFooter; }

void append_btrace_block(std::string& out, const BtraceBlock& block) {
  out += "<block begin=\"0x";
  out += hex_number(block.begin);
  out += "\" end=\"0x";
  out += hex_number(block.end);
  out += "\"/>\n";
}

std::string btrace_bts_xml(std::vector<BtraceBlock> oldest_first, BtraceRead kind) {
  if (!oldest_first.empty()) {
    if (kind == BtraceRead::Delta) {
      oldest_first.front().begin = 0;
    } else if (oldest_first.front().begin == 0) {
      oldest_first.erase(oldest_first.begin());
    }
  }
  std::string out(kBtraceHeader);
  std::for_each(oldest_first.rbegin(), oldest_first.rend(), [&](const BtraceBlock& b) { append_btrace_block(out, b); });
  out += kBtraceFooter;
  return out;
}

std::string btrace_empty_xml() { return std::string(kBtraceHeader) + std::string(kBtraceFooter); }

std::string btrace_conf_bts_xml(uint64_t size) {
  return "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
         "<bts size=\"0x" + hex_number(size) + "\" />\n</btrace-conf>\n";
}

std::string btrace_pt_xml_head() { return std::string(kBtraceHeader) + "<pt>\n<pt-config>\n</pt-config>\n"; }
std::string_view btrace_pt_raw_open() { return "<raw>\n"; }
std::string_view btrace_pt_raw_close() { return "</raw>\n"; }
std::string btrace_pt_xml_tail() { return "</pt>\n" + std::string(kBtraceFooter); }

void append_pt_hex(std::string& out, const uint8_t* bytes, std::size_t count) { out += hex_encode(bytes, count); }

std::string btrace_pt_xml(const std::vector<uint8_t>& packets) {
  std::string out = btrace_pt_xml_head();
  if (!packets.empty()) {
    out += btrace_pt_raw_open();
    append_pt_hex(out, packets.data(), packets.size());
    out += btrace_pt_raw_close();
  }
  out += btrace_pt_xml_tail();
  return out;
}

std::string btrace_conf_pt_xml(uint64_t size) {
  return "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
         "<pt size=\"0x" + hex_number(size) + "\"/>\n</btrace-conf>\n";
}

}  // namespace protocol
