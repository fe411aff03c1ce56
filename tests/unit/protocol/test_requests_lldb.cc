// parse_request() and the replies of LLDB's own packets (lldb-server's
// syntax, as LLDB 14 sends and reads them).
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/replies.h"
#include "protocol/requests.h"

namespace test_requests_lldb {  // this file's own names, apart in a unity build

using namespace protocol;
using test::parse_as;
using test::require_bad;

TEST_CASE("LLDB's queries without arguments", "[requests][lldb]") {
  parse_as<HostInfoQuery>("qHostInfo");
  parse_as<ProcessInfoQuery>("qProcessInfo");
  parse_as<ThreadsInfoQuery>("jThreadsInfo");
  parse_as<EnableErrorStrings>("QEnableErrorStrings");
  parse_as<SharedLibraryInfoQuery>("qShlibInfoAddr");
  parse_as<WatchpointCountQuery>("qWatchpointSupportInfo:");
  parse_as<WatchpointCountQuery>("qWatchpointSupportInfo");
  for (const char* payload : {"qHostInfo:", "jThreadsInfo:", "QEnableErrorStrings;", "qWatchpointSupportInfo:1"}) {
    require_bad(payload);
  }
  // Another name altogether (names end at ':', ',', ';' or '?').
  for (const char* payload : {"qProcessInfo1", "qShlibInfoAddr0", "jThreadExtendedInfo:"}) {
    CHECK(std::holds_alternative<UnknownPacket>(*parse_request(payload)));
  }
}

TEST_CASE("qThreadStopInfo takes the thread id right after its name", "[requests][lldb]") {
  auto plain = parse_as<ThreadStopInfoQuery>("qThreadStopInfo12e3");
  CHECK(plain.thread == ThreadId{ThreadId::kAny, 0x12e3});
  auto multi = parse_as<ThreadStopInfoQuery>("qThreadStopInfop12e3.12e4");
  CHECK(multi.thread == ThreadId{0x12e3, 0x12e4});
  CHECK(packet_name("qThreadStopInfo12e3") == "qThreadStopInfo");
  for (const char* payload : {"qThreadStopInfo", "qThreadStopInfozz", "qThreadStopInfo:12", "qThreadStopInfop.1"}) {
    require_bad(payload);
  }
}

TEST_CASE("qMemoryRegionInfo takes one address", "[requests][lldb]") {
  CHECK(parse_as<MemoryRegionQuery>("qMemoryRegionInfo:7ffff7fc8000").addr == 0x7ffff7fc8000);
  for (const char* payload : {"qMemoryRegionInfo", "qMemoryRegionInfo:", "qMemoryRegionInfo:zz",
                              "qMemoryRegionInfo:10000000000000000", "qMemoryRegionInfo;12"}) {
    require_bad(payload);
  }
}

TEST_CASE("x reads like m", "[requests][lldb]") {
  auto read = parse_as<ReadMemoryBinary>("x7fffffffe600,200");
  CHECK(read.addr == 0x7fffffffe600);
  CHECK(read.length == 0x200);
  CHECK(parse_as<ReadMemoryBinary>("x0,0").length == 0);
  for (const char* payload : {"x", "x12", "x,4", "xzz,4", "x12,", "x12,zz", "x12,10000000000000000"}) {
    require_bad(payload);
  }
}

TEST_CASE("_M allocates with permissions, _m frees", "[requests][lldb]") {
  auto rwx = parse_as<AllocateMemory>("_M1000,rwx");
  CHECK(rwx.size == 0x1000);
  CHECK((rwx.read && rwx.write && rwx.execute));
  auto rx = parse_as<AllocateMemory>("_M20,rx");
  CHECK((rx.read && !rx.write && rx.execute));
  auto none = parse_as<AllocateMemory>("_M20,");
  CHECK((!none.read && !none.write && !none.execute));
  CHECK(parse_as<DeallocateMemory>("_m7ffff7ff0000").addr == 0x7ffff7ff0000);
  for (const char* payload : {"_M", "_M1000", "_M0,rw", "_Mzz,rw", "_M1000,rwq", "_M1000,rr", "_m", "_mzz",
                              "_m10000000000000000"}) {
    require_bad(payload);
  }
  CHECK(std::holds_alternative<UnknownPacket>(*parse_request("_x")));
}

TEST_CASE("LLDB replies: key-value lists, error strings, binary reads", "[replies][lldb]") {
  CHECK(reply_key_values({{"pid", "2a"}, {"ostype", "linux"}}) == "pid:2a;ostype:linux;");
  CHECK(lldb_error_strings("E.No process") == "E01;4e6f2070726f63657373");
  CHECK(lldb_error_strings("E01") == "E01");
  CHECK(lldb_error_strings("OK") == "OK");
  CHECK(reply_binary_memory({}) == "OK");
  CHECK(reply_binary_memory({'a', '}', '#', 0}) == std::string("a}]}\x03", 5) + std::string(1, '\0'));
}

TEST_CASE("jThreadsInfo: one object per thread, escaped for the wire", "[replies][lldb]") {
  ThreadStopSummary hit;
  hit.tid = 4676;
  hit.name = "two";
  hit.signal = 5;
  hit.reason = "breakpoint";
  hit.registers = {{16, {0x79, 0x51, 0, 0, 0, 0, 0, 0}}};
  ThreadStopSummary other;
  other.tid = 4677;
  const std::string wire = reply_threads_info({hit, other});
  auto json = unescape_binary(wire);
  REQUIRE(json.has_value());
  CHECK(*json ==
        R"([{"name":"two","reason":"breakpoint","registers":{"16":"7951000000000000"},"signal":5,"tid":4676},)"
        R"({"tid":4677}])");
  CHECK(wire.find('}') != std::string::npos);         // only as escapes:
  CHECK(wire.find("}]") != std::string::npos);        // '}' itself goes out as "}]"
}

}  // namespace test_requests_lldb
