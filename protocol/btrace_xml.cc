#include "protocol/btrace_xml.h"

#include <algorithm>
#include <cstdio>

namespace protocol {

namespace {

constexpr std::string_view kBtraceHeader =
    "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n";
constexpr std::string_view kBtraceFooter = "</btrace>\n";

// Lower-case hex without leading zeros ("0" for zero), like gdbserver.
std::string hex(uint64_t value) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace

std::optional<BtraceRead> parse_btrace_annex(std::string_view annex) {
  if (annex == "all") return BtraceRead::All;
  if (annex == "new") return BtraceRead::New;
  if (annex == "delta") return BtraceRead::Delta;
  return std::nullopt;
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
  std::for_each(oldest_first.rbegin(), oldest_first.rend(), [&](const BtraceBlock& b) {
    out += "<block begin=\"0x" + hex(b.begin) + "\" end=\"0x" + hex(b.end) + "\"/>\n";
  });
  out += kBtraceFooter;
  return out;
}

std::string btrace_empty_xml() { return std::string(kBtraceHeader) + std::string(kBtraceFooter); }

std::string btrace_conf_bts_xml(uint64_t size) {
  return "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
         "<bts size=\"0x" + hex(size) + "\" />\n</btrace-conf>\n";
}

std::string btrace_pt_xml(const std::vector<uint8_t>& packets) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(kBtraceHeader);
  out += "<pt>\n<pt-config>\n</pt-config>\n";
  if (!packets.empty()) {
    out += "<raw>\n";
    out.reserve(out.size() + 2 * packets.size() + 32);
    for (uint8_t byte : packets) {
      out += kDigits[byte >> 4];
      out += kDigits[byte & 0xf];
    }
    out += "</raw>\n";
  }
  out += "</pt>\n";
  out += kBtraceFooter;
  return out;
}

std::string btrace_conf_pt_xml(uint64_t size) {
  return "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
         "<pt size=\"0x" + hex(size) + "\"/>\n</btrace-conf>\n";
}

}  // namespace protocol
