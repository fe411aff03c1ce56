// parse_request() for the branch-trace control packets.
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/requests.h"

namespace test_btrace_requests {  // this file's own names, apart in a unity build

using namespace protocol;

TEST_CASE("Qbtrace parses bts, pt and off", "[requests][btrace]") {
  CHECK(test::parse_as<BtraceControl>("Qbtrace:bts").op == BtraceOp::Bts);
  CHECK(test::parse_as<BtraceControl>("Qbtrace:pt").op == BtraceOp::Pt);
  CHECK(test::parse_as<BtraceControl>("Qbtrace:off").op == BtraceOp::Off);
  CHECK(packet_name("Qbtrace:bts") == "Qbtrace");
}

TEST_CASE("Qbtrace with an unknown or missing operation is an error gdb can print", "[requests][btrace]") {
  test::require_bad("Qbtrace:lbr");
  test::require_bad("Qbtrace:");
  test::require_bad("Qbtrace");
  test::require_bad("Qbtrace:btsx");
  test::require_bad("Qbtrace:bts:");
  auto result = parse_request("Qbtrace:foo");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message == "Bad Qbtrace operation.  Use bts, pt, or off.");
}

TEST_CASE("Qbtrace-conf parses the bts and pt buffer sizes", "[requests][btrace]") {
  auto bts = test::parse_as<BtraceConfigure>("Qbtrace-conf:bts:size=0x10000");
  CHECK(bts.format == BtraceFormat::Bts);
  CHECK(bts.size == 0x10000);
  auto pt = test::parse_as<BtraceConfigure>("Qbtrace-conf:pt:size=0x4000");
  CHECK(pt.format == BtraceFormat::Pt);
  CHECK(pt.size == 0x4000);
  // gdbserver's strtoul(…, 16) takes the number without 0x as well.
  CHECK(test::parse_as<BtraceConfigure>("Qbtrace-conf:bts:size=800").size == 0x800);
  CHECK(test::parse_as<BtraceConfigure>("Qbtrace-conf:bts:size=0xffffffff").size == 0xffffffffu);
  CHECK(test::parse_as<BtraceConfigure>("Qbtrace-conf:bts:size=0").size == 0);
  CHECK(packet_name("Qbtrace-conf:bts:size=0x10") == "Qbtrace-conf");
}

TEST_CASE("Qbtrace-conf rejects unknown options and bad sizes", "[requests][btrace]") {
  test::require_bad("Qbtrace-conf:bts:size=");
  test::require_bad("Qbtrace-conf:bts:size=0x");
  test::require_bad("Qbtrace-conf:bts:size=0x1g");
  test::require_bad("Qbtrace-conf:bts:size=0x100000000");  // wider than gdb's unsigned int
  test::require_bad("Qbtrace-conf:bts:size=0x10000000000000000");
  test::require_bad("Qbtrace-conf:bts:size=-1");
  test::require_bad("Qbtrace-conf:lbr:size=0x10");
  test::require_bad("Qbtrace-conf:bts:count=0x10");
  test::require_bad("Qbtrace-conf:bts");
  test::require_bad("Qbtrace-conf");
  auto bad_size = parse_request("Qbtrace-conf:bts:size=zz");
  REQUIRE_FALSE(bad_size.ok());
  CHECK(bad_size.error().message == "Bad size value.");
  auto bad_option = parse_request("Qbtrace-conf:bts:depth=1");
  REQUIRE_FALSE(bad_option.ok());
  CHECK(bad_option.error().message == "Bad Qbtrace configuration option.");
}

TEST_CASE("qXfer btrace objects parse as generic reads with their annex", "[requests][btrace]") {
  auto delta = test::parse_as<XferRead>("qXfer:btrace:read:delta:0,fff");
  CHECK(delta.object == "btrace");
  CHECK(delta.annex == "delta");
  CHECK(delta.offset == 0);
  CHECK(delta.length == 0xfff);
  auto conf = test::parse_as<XferRead>("qXfer:btrace-conf:read::1a,100");
  CHECK(conf.object == "btrace-conf");
  CHECK(conf.annex.empty());
  CHECK(conf.offset == 0x1a);
}

}  // namespace test_btrace_requests
