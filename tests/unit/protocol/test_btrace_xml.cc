// The branch-trace documents: newest block first, the delta stitching rule,
// the pruned unknown-origin block, empty traces and btrace-conf.
#include <catch2/catch.hpp>

#include "protocol/btrace_xml.h"

namespace test_btrace_xml {  // this file's own names, apart in a unity build

using namespace protocol;

namespace {

const std::string kHead = "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n";
const std::string kTail = "</btrace>\n";

std::string block(const char* begin, const char* end) {
  return std::string("<block begin=\"0x") + begin + "\" end=\"0x" + end + "\"/>\n";
}

// Three blocks, oldest first: traced from 0x1000 to a jump at 0x1008, from
// its target 0x2000 to a call at 0x2010, from 0x3000 to the pc 0x3004.
const std::vector<BtraceBlock> kThree = {{0x1000, 0x1008}, {0x2000, 0x2010}, {0x3000, 0x3004}};

}  // namespace

TEST_CASE("btrace annexes are all, new and delta only", "[btrace_xml]") {
  CHECK(parse_btrace_annex("all") == BtraceRead::All);
  CHECK(parse_btrace_annex("new") == BtraceRead::New);
  CHECK(parse_btrace_annex("delta") == BtraceRead::Delta);
  CHECK_FALSE(parse_btrace_annex(""));
  CHECK_FALSE(parse_btrace_annex("ALL"));
  CHECK_FALSE(parse_btrace_annex("deltas"));
}

TEST_CASE("all lists blocks newest first with lower-case unpadded hex", "[btrace_xml]") {
  CHECK(btrace_bts_xml(kThree, BtraceRead::All) ==
        kHead + block("3000", "3004") + block("2000", "2010") + block("1000", "1008") + kTail);
  CHECK(btrace_bts_xml({{0x7ffff7fe3290, 0xFFFFFFFFFFFFFFFF}}, BtraceRead::All) ==
        kHead + block("7ffff7fe3290", "ffffffffffffffff") + kTail);
}

TEST_CASE("new is the same document as all", "[btrace_xml]") {
  CHECK(btrace_bts_xml(kThree, BtraceRead::New) == btrace_bts_xml(kThree, BtraceRead::All));
}

TEST_CASE("delta: the oldest listed block begins at 0x0 for gdb's stitching", "[btrace_xml]") {
  CHECK(btrace_bts_xml(kThree, BtraceRead::Delta) ==
        kHead + block("3000", "3004") + block("2000", "2010") + block("0", "1008") + kTail);
  // Nothing new since the last read: one partial block ending at the pc.
  CHECK(btrace_bts_xml({{0x3000, 0x3008}}, BtraceRead::Delta) == kHead + block("0", "3008") + kTail);
}

TEST_CASE("all/new drop an oldest block whose begin is unknown", "[btrace_xml]") {
  std::vector<BtraceBlock> unknown_origin = {{0, 0x1008}, {0x2000, 0x2010}};
  CHECK(btrace_bts_xml(unknown_origin, BtraceRead::All) == kHead + block("2000", "2010") + kTail);
  CHECK(btrace_bts_xml(unknown_origin, BtraceRead::New) == kHead + block("2000", "2010") + kTail);
  // Only the oldest is dropped: a later zero-begin block is data.
  std::vector<BtraceBlock> later_zero = {{0x1000, 0x1008}, {0, 0x10}};
  CHECK(btrace_bts_xml(later_zero, BtraceRead::All) == kHead + block("0", "10") + block("1000", "1008") + kTail);
  CHECK(btrace_bts_xml({{0, 0x1008}}, BtraceRead::All) == kHead + kTail);
}

TEST_CASE("empty traces are a btrace element without blocks", "[btrace_xml]") {
  CHECK(btrace_empty_xml() == kHead + kTail);
  CHECK(btrace_bts_xml({}, BtraceRead::All) == kHead + kTail);
  CHECK(btrace_bts_xml({}, BtraceRead::Delta) == kHead + kTail);
}

TEST_CASE("btrace-conf names the bts buffer size in hex", "[btrace_xml]") {
  CHECK(btrace_conf_bts_xml(0x10000) ==
        "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
        "<bts size=\"0x10000\" />\n</btrace-conf>\n");
  CHECK(btrace_conf_bts_xml(0).find("<bts size=\"0x0\" />") != std::string::npos);
}

TEST_CASE("pt documents carry the packets as hex in raw, with no cpu in pt-config", "[btrace_xml]") {
  CHECK(btrace_pt_xml({0x02, 0x82, 0xab, 0x0f}) ==
        kHead + "<pt>\n<pt-config>\n</pt-config>\n<raw>\n0282ab0f</raw>\n</pt>\n" + kTail);
  // No packets: no raw element (gdb's empty pt trace, as gdbserver sends it).
  CHECK(btrace_pt_xml({}) == kHead + "<pt>\n<pt-config>\n</pt-config>\n</pt>\n" + kTail);
}

TEST_CASE("btrace-conf names the pt buffer size in hex", "[btrace_xml]") {
  CHECK(btrace_conf_pt_xml(0x4000) ==
        "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
        "<pt size=\"0x4000\"/>\n</btrace-conf>\n");
}

}  // namespace test_btrace_xml
