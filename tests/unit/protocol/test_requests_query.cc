// parse_request(): session, query and thread packets; packet_name().
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/requests.h"

namespace test_requests_query {  // this file's own names, apart in a unity build

using namespace protocol;

namespace {

using test::parse_as;
using test::require_bad;

void require_unknown(std::string_view payload, std::string_view name) {
  CHECK(parse_as<UnknownPacket>(payload).name == name);
}

}  // namespace

TEST_CASE("thread ids parse in every form", "[requests][thread_id]") {
  CHECK(parse_thread_id("p1f.2a") == ThreadId{0x1f, 0x2a});
  CHECK(parse_thread_id("p1f.-1") == ThreadId{0x1f, ThreadId::kAll});
  CHECK(parse_thread_id("p1f") == ThreadId{0x1f, ThreadId::kAll});
  CHECK(parse_thread_id("p-1.-1") == ThreadId{ThreadId::kAll, ThreadId::kAll});
  CHECK(parse_thread_id("2a") == ThreadId{ThreadId::kAny, 0x2a});
  CHECK(parse_thread_id("-1")->is_all());
  CHECK(parse_thread_id("0")->is_any());
  CHECK(parse_thread_id("ABC")->tid == 0xabc);
}

TEST_CASE("malformed thread ids are rejected", "[requests][thread_id]") {
  for (const char* text : {"", "p", "p.", "p1f.", "p.1", "pzz.1", "p1.zz", "x", "-2", "--1", "1 ",
                           "p1.2.3", "10000000000000000", "p1f.2a;"}) {
    INFO(text);
    CHECK_FALSE(parse_thread_id(text).has_value());
  }
}

TEST_CASE("thread ids format with and without multiprocess", "[requests][thread_id]") {
  CHECK(format_thread_id(ThreadId{0x1f, 0x2a}, true) == "p1f.2a");
  CHECK(format_thread_id(ThreadId{0x1f, 0x2a}, false) == "2a");
  CHECK(format_thread_id(ThreadId{ThreadId::kAll, ThreadId::kAll}, true) == "p-1.-1");
  CHECK(format_thread_id(ThreadId{0, 0}, false) == "0");
  auto round = parse_thread_id(format_thread_id(ThreadId{12345, 67890}, true));
  CHECK(round == ThreadId{12345, 67890});
}

TEST_CASE("packet_name", "[requests]") {
  CHECK(packet_name("qXfer:features:read:target.xml:0,fff") == "qXfer");
  CHECK(packet_name("qSupported:multiprocess+") == "qSupported");
  CHECK(packet_name("qSupported") == "qSupported");
  CHECK(packet_name("vCont;c") == "vCont");
  CHECK(packet_name("vCont?") == "vCont");
  CHECK(packet_name("vFile:open:2f,0,0") == "vFile");
  CHECK(packet_name("qRcmd,6869") == "qRcmd");
  CHECK(packet_name("QPassSignals:e") == "QPassSignals");
  CHECK(packet_name("Z0,401000,1") == "Z0");
  CHECK(packet_name("z2,401000,8") == "z2");
  CHECK(packet_name("m401000,4") == "m");
  CHECK(packet_name("g") == "g");
  CHECK(packet_name("Hgp1.1") == "H");
  CHECK(packet_name("bc") == "bc");
  CHECK(packet_name("bs") == "bs");
  CHECK(packet_name("?") == "?");
  CHECK(packet_name("") == "");
}

TEST_CASE("qSupported", "[requests]") {
  CHECK(parse_as<QSupported>("qSupported").client_features.empty());
  auto q = parse_as<QSupported>(
      "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;xmlRegisters=i386");
  REQUIRE(q.client_features.size() == 6);
  CHECK(q.client_features[0] == "multiprocess+");
  CHECK(q.client_features[5] == "xmlRegisters=i386");
  require_bad("qSupported;swbreak+");
}

TEST_CASE("simple session queries", "[requests]") {
  parse_as<QStartNoAckMode>("QStartNoAckMode");
  parse_as<QueryCurrentThread>("qC");
  parse_as<QueryThreadInfoFirst>("qfThreadInfo");
  parse_as<QueryThreadInfoNext>("qsThreadInfo");
  parse_as<QueryStopReason>("?");
  parse_as<MustReplyEmpty>("vMustReplyEmpty");
  parse_as<QueryVContSupported>("vCont?");
  for (const char* bad : {"QStartNoAckMode:1", "qC,1", "qfThreadInfo:", "??", "vMustReplyEmpty:1",
                          "vCont?c", "vCont"})
    require_bad(bad);
  // A longer word is another packet, not a malformed one.
  require_unknown("QStartNoAckModeX", "QStartNoAckModeX");
  require_unknown("qC1", "qC1");
}

TEST_CASE("qAttached", "[requests]") {
  CHECK_FALSE(parse_as<QueryAttached>("qAttached").pid.has_value());
  CHECK(parse_as<QueryAttached>("qAttached:1f").pid == 0x1f);
  require_bad("qAttached:");
  require_bad("qAttached:xyz");
  require_unknown("qAttached1f", "qAttached1f");
  require_bad("qAttached:10000000000000000");
}

TEST_CASE("qXfer read", "[requests]") {
  auto x = parse_as<XferRead>("qXfer:features:read:target.xml:0,fff");
  CHECK(x.object == "features");
  CHECK(x.annex == "target.xml");
  CHECK(x.offset == 0);
  CHECK(x.length == 0xfff);

  auto empty_annex = parse_as<XferRead>("qXfer:auxv:read::1a0,FFB");
  CHECK(empty_annex.object == "auxv");
  CHECK(empty_annex.annex.empty());
  CHECK(empty_annex.offset == 0x1a0);
  CHECK(empty_annex.length == 0xffb);

  auto big = parse_as<XferRead>("qXfer:exec-file:read:1f:ffffffffffffffff,1");
  CHECK(big.annex == "1f");
  CHECK(big.offset == UINT64_MAX);

  require_unknown("qXfer:features:append:target.xml:0:abc", "qXfer");
  for (const char* bad : {"qXfer", "qXfer:", "qXfer::read:a:0,1", "qXfer:features",
                          "qXfer:features:read", "qXfer:features:read:target.xml",
                          "qXfer:features:read:target.xml:0", "qXfer:features:read:target.xml:0,",
                          "qXfer:features:read:target.xml:,10", "qXfer:features:read:t:0x0,10",
                          "qXfer:features:read:t:g,10", "qXfer:features:read:t:0,10000000000000000"})
    require_bad(bad);
}

TEST_CASE("qXfer write: annex, offset and binary data", "[requests]") {
  auto w = parse_as<XferWrite>("qXfer:siginfo:write::8:a}\x03:b");
  CHECK(w.object == "siginfo");
  CHECK(w.annex.empty());
  CHECK(w.offset == 8);
  CHECK(w.data == std::string("a#:b"));
  auto named = parse_as<XferWrite>("qXfer:features:write:target.xml:10:");
  CHECK(named.annex == "target.xml");
  CHECK(named.offset == 0x10);
  CHECK(named.data.empty());
  for (const char* bad : {"qXfer:siginfo:write", "qXfer:siginfo:write:", "qXfer:siginfo:write::", "qXfer:siginfo:write::zz:a",
                          "qXfer:siginfo:write::8", "qXfer:siginfo:write::8:a}"})
    require_bad(bad);
}

TEST_CASE("qRcmd decodes its hex command", "[requests]") {
  CHECK(parse_as<MonitorCommand>("qRcmd,68656c70").command == "help");
  CHECK(parse_as<MonitorCommand>("qRcmd,").command.empty());
  CHECK(parse_as<MonitorCommand>("qRcmd,4F4B").command == "OK");
  require_bad("qRcmd");
  require_bad("qRcmd,686");
  require_bad("qRcmd,zz");
  require_bad("qRcmd:6869");
}

TEST_CASE("H and T thread packets", "[requests]") {
  auto hg = parse_as<SetThread>("Hgp1f.2a");
  CHECK(hg.op == 'g');
  CHECK(hg.thread == ThreadId{0x1f, 0x2a});
  auto hc = parse_as<SetThread>("Hc-1");
  CHECK(hc.op == 'c');
  CHECK(hc.thread.is_all());
  CHECK(parse_as<SetThread>("Hg0").thread.is_any());
  CHECK(parse_as<ThreadAlive>("Tp1f.20").thread == ThreadId{0x1f, 0x20});
  CHECK(parse_as<ThreadAlive>("T20").thread == ThreadId{0, 0x20});
  require_unknown("Hs1", "H");
  for (const char* bad : {"H", "Hg", "Hgxyz", "Hcp1.", "T", "Tp", "T1,2"}) require_bad(bad);
}

TEST_CASE("QPassSignals and QProgramSignals", "[requests]") {
  auto pass = parse_as<SetPassSignals>("QPassSignals:e;14;1f;4c");
  CHECK(pass.signals == std::vector<int>{0xe, 0x14, 0x1f, 0x4c});
  CHECK(parse_as<SetPassSignals>("QPassSignals:").signals.empty());
  auto program = parse_as<SetProgramSignals>("QProgramSignals:0;1;3;4;6;7;8;9;a");
  CHECK(program.signals.size() == 9);
  CHECK(program.signals.back() == 0xa);
  for (const char* bad : {"QPassSignals", "QPassSignals:x", "QPassSignals:e;zz", "QPassSignals:100",
                          "QProgramSignals", "QProgramSignals:-1"})
    require_bad(bad);
}

TEST_CASE("QCatchSyscalls", "[requests]") {
  auto off = parse_as<SetCatchSyscalls>("QCatchSyscalls:0");
  CHECK_FALSE(off.enable);
  auto any = parse_as<SetCatchSyscalls>("QCatchSyscalls:1");
  CHECK(any.enable);
  CHECK(any.syscalls.empty());
  auto some = parse_as<SetCatchSyscalls>("QCatchSyscalls:1;1;3c;e7");
  CHECK(some.enable);
  CHECK(some.syscalls == std::vector<int>{1, 0x3c, 0xe7});
  for (const char* bad : {"QCatchSyscalls", "QCatchSyscalls:", "QCatchSyscalls:2", "QCatchSyscalls:0;1",
                          "QCatchSyscalls:1;", "QCatchSyscalls:1;zz", "QCatchSyscalls:1;-1", "QCatchSyscalls:1;10000",
                          "QCatchSyscalls:11"})
    require_bad(bad);
}

TEST_CASE("unknown packets are UnknownPacket with their name", "[requests]") {
  require_unknown("qTStatus", "qTStatus");
  require_unknown("qOffsets", "qOffsets");
  require_unknown("qTfV", "qTfV");
  require_unknown("qCRC:401000,10", "qCRC");
  require_unknown("vFile:lstat:2f746d70", "vFile:lstat");  // a later gdb's
  require_unknown("qThreadExtraInfo,p1f.1f", "qThreadExtraInfo");
  require_unknown("", "");
  require_unknown("b9600", "b");
  require_unknown("Z5,1000,1", "Z5");
}

TEST_CASE("parse_request never throws on arbitrary bytes", "[requests]") {
  // A deterministic sweep over short byte strings built from the protocol's
  // own alphabet plus junk, looking for exceptions or crashes.
  const std::string alphabet = "qQvmMXgGpPZzcCsSkDHT?:,;=#$}-pf0129aF.\xff";
  uint32_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    std::string payload;
    std::size_t len = 1 + (i % 24);
    for (std::size_t j = 0; j < len; ++j) {
      state = state * 1103515245u + 12345u;
      payload += alphabet[(state >> 16) % alphabet.size()];
    }
    CHECK_NOTHROW((void)parse_request(payload));
    CHECK_NOTHROW((void)packet_name(payload));
  }
}

}  // namespace test_requests_query
