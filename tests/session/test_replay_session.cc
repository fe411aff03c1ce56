// Reverse execution through Session: the packets gdb sends for
// reverse-stepi/-step/-next/-finish/-continue and forward replay, against a
// fake process holding the hand-assembled program of replay_fixture.h and a
// fake backend holding its recorded history. Every reply is the exact
// payload gdb would receive.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "fake_process.h"
#include "fake_thread_db.h"
#include "fake_trace_backend.h"
#include "stub/replay/replay_engine.h"
#include "stub/session/session.h"
#include "tests/unit/decoder/replay_fixture.h"

namespace test_replay_session {  // this file's own names, apart in a unity build

using protocol::Amd64Reg;
using replay_test::kB0;
using replay_test::kR0;

namespace {

// No read-only mappings but the code.
class CodeOnlyMaps : public stub::replay::MappingInfo {
 public:
  std::optional<std::pair<uint64_t, uint64_t>> read_only_range(uint64_t addr) override {
    if (addr >= replay_test::kBase && addr < replay_test::kBase + 0x1000) {
      return std::pair<uint64_t, uint64_t>{replay_test::kBase, replay_test::kBase + 0x1000};
    }
    return std::nullopt;
  }
};

std::string le_hex(uint64_t value) {
  std::string out;
  char byte[3];
  for (int i = 0; i < 8; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned>((value >> (8 * i)) & 0xff));
    out += byte;
  }
  return out;
}

std::string hex_text(const std::string& text) {
  std::string out;
  char byte[3];
  for (unsigned char c : text) {
    std::snprintf(byte, sizeof byte, "%02x", c);
    out += byte;
  }
  return out;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The expedited pc of a T reply ("10:<8 bytes>;"): the position gdb sees.
std::string pc_field(uint64_t pc) { return "10:" + le_hex(pc) + ";"; }

struct Fixture {
  test::FakeProcess process;
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  Fixture() {
    const auto& code = replay_test::code();
    for (std::size_t i = 0; i < code.size(); ++i) process.memory[replay_test::kBase + i] = code[i];
    // The live stack holds other values than the past did.
    for (uint64_t a = kR0 - 64; a < kR0 + 16; ++a) process.memory[a] = 0xee;
    auto& regs = process.regs[100];
    regs.set_u64(Amd64Reg::rip, 0x401017);
    regs.set_u64(Amd64Reg::rsp, kR0);
    regs.set_u64(Amd64Reg::rbp, kB0);
    regs.set_u64(Amd64Reg::rax, 0x1234);
    REQUIRE(backend.enable(100).ok());
    backend.replace_trace(100, replay_test::trace(true));
    session.trace_backend = &backend;
    session.replay_maps = [](pid_t) { return std::make_unique<CodeOnlyMaps>(); };
    REQUIRE(ask("qSupported:swbreak+;hwbreak+").size() > 0);
    REQUIRE(ask("Hc64") == "OK");
    REQUIRE(ask("Hg64") == "OK");
  }

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  std::size_t resumes() const {
    std::size_t n = 0;
    for (const auto& line : process.log) n += line.rfind("resume", 0) == 0;
    return n;
  }
};

}  // namespace

TEST_CASE("reverse execution is advertised only with a trace backend", "[replay]") {
  Fixture with;
  std::string reply = with.ask("qSupported:swbreak+");
  CHECK(contains(reply, ";ReverseStep+"));
  CHECK(contains(reply, ";ReverseContinue+"));

  test::FakeProcess process;
  stub::session::Session without{stub::session::SessionConfig{}, &process};
  auto plain = without.handle_packet("qSupported:swbreak+");
  REQUIRE(plain.payload);
  CHECK_FALSE(contains(*plain.payload, "Reverse"));
  auto bs = without.handle_packet("bs");
  REQUIRE(bs.payload);
  CHECK(bs.payload->rfind("E.", 0) == 0);
  CHECK(contains(*bs.payload, "recorded history"));
  CHECK(process.log.empty());  // nothing ran
}

TEST_CASE("bs steps the Hc thread back one instruction; registers in the past", "[replay]") {
  Fixture f;
  // Live: main's ret at 0x401017; one back is its leave.
  std::string stop = f.ask("bs");
  CHECK(stop.rfind("T05", 0) == 0);
  CHECK(contains(stop, pc_field(0x401016)));
  CHECK(contains(stop, "07:" + le_hex(kR0 - 24) + ";"));  // rsp
  CHECK(contains(stop, "06:" + le_hex(kR0 - 8) + ";"));   // rbp
  CHECK(contains(stop, "thread:64;"));
  CHECK_FALSE(contains(stop, "replaylog"));
  CHECK(f.ask("?") == stop);
  CHECK(f.resumes() == 0);

  // g: rax is unknown in the past (xx), rip/rsp/rbp as the history says.
  std::string g = f.ask("g");
  CHECK(g.substr(0, 16) == std::string(16, 'x'));
  CHECK(f.ask("p10") == le_hex(0x401016));
  CHECK(f.ask("p7") == le_hex(kR0 - 24));
  CHECK(f.ask("p0") == std::string(16, 'x'));

  std::string second = f.ask("bs");
  CHECK(contains(second, pc_field(0x401014)));
  CHECK(f.ask("?") == second);
}

TEST_CASE("bc stops at an inserted breakpoint; memory and writes in the past", "[replay]") {
  Fixture f;
  REQUIRE(f.ask("Z0,401024,1") == "OK");
  std::string stop = f.ask("bc");
  CHECK(contains(stop, pc_field(0x401024)));
  CHECK(contains(stop, "swbreak:;"));
  CHECK(contains(stop, "07:" + le_hex(kR0 - 40) + ";"));

  // f's return address and saved rbp as they were; main's locals unknown.
  CHECK(f.ask("m" + std::string("7ffe0fe0") + ",8") == le_hex(0x401012));  // kR0 - 32
  CHECK(f.ask("m7ffe0fd8,8") == le_hex(kR0 - 8));                          // kR0 - 40
  CHECK(f.ask("m7ffe0ff0,8") == "E01");                                     // kR0 - 16
  CHECK(f.ask("m401024,2") == "6a2a");                                      // code: live bytes

  // The past cannot be changed.
  for (std::string write : {"M7ffe0fe0,1:00", "X7ffe0fe0,1:\x01", "P0=0000000000000000"}) {
    std::string reply = f.ask(write);
    CHECK(reply.rfind("E.", 0) == 0);
    CHECK(contains(reply, "replaying"));
  }
  CHECK(f.process.memory[kR0 - 32] == 0xee);
  CHECK(f.ask("X7ffe0fe0,0:") == "OK");  // gdb's X probe is not a write

  // The second earlier call of f, then the first, then the start of history.
  CHECK(contains(f.ask("bc"), pc_field(0x401024)));
  CHECK(contains(f.ask("bc"), pc_field(0x401024)));
  std::string begin = f.ask("bc");
  CHECK(contains(begin, "replaylog:begin;"));
  CHECK(contains(begin, pc_field(0x401030)));
  // Nothing older: bs reports the beginning again without moving.
  CHECK(f.ask("bs") == begin);
  // A removed breakpoint no longer stops a replay.
  REQUIRE(f.ask("z0,401024,1") == "OK");
  std::string end = f.ask("c");
  CHECK(contains(end, "replaylog:end;"));
  CHECK(contains(end, pc_field(0x401017)));
  CHECK(f.resumes() == 0);
}

TEST_CASE("forward s/c/vCont move through the history, then the program runs live", "[replay]") {
  Fixture f;
  REQUIRE(f.ask("Z0,401020,1") == "OK");
  REQUIRE(contains(f.ask("bc"), pc_field(0x401020)));  // third call of f
  REQUIRE(contains(f.ask("bc"), pc_field(0x401020)));  // second
  // s and vCont;s step forward in the history.
  CHECK(contains(f.ask("s"), pc_field(0x401021)));
  CHECK(contains(f.ask("vCont;s:p64.64;c"), pc_field(0x401024)));
  // vCont;c runs on to the next breakpoint in the history: the third call.
  CHECK(contains(f.ask("vCont;c"), pc_field(0x401020)));
  // Then to the live end.
  std::string end = f.ask("vCont;c");
  CHECK(contains(end, "replaylog:end;"));
  CHECK(contains(end, pc_field(0x401017)));
  CHECK(f.resumes() == 0);
  // Live registers again; the next resume runs the program.
  CHECK(f.ask("p0") == le_hex(0x1234));
  auto live = f.session.handle_packet("vCont;c");
  CHECK_FALSE(live.payload.has_value());
  CHECK(f.resumes() == 1);
}

// gdb's Ctrl-C while the program stood in the past (or at the present
// before a reverse resume): the next resume stops at once with SIGINT,
// where the thread is, as a live program's queued SIGINT stops it.
TEST_CASE("an interrupt while stopped stops the next replay where it is", "[replay]") {
  Fixture f;
  f.session.on_interrupt();
  std::string live = f.ask("bc");
  CHECK(live.rfind("T02", 0) == 0);
  CHECK(contains(live, pc_field(0x401017)));
  CHECK(contains(f.ask("bs"), pc_field(0x401016)));  // owed once only
  f.session.on_interrupt();
  std::string past = f.ask("c");
  CHECK(past.rfind("T02", 0) == 0);
  CHECK(contains(past, pc_field(0x401016)));
  CHECK(contains(f.ask("s"), pc_field(0x401017)));
  CHECK(f.resumes() == 0);
}

TEST_CASE("each thread replays on its own; a thread without history is at its beginning", "[replay]") {
  Fixture f;
  f.process.threads_.push_back(101);
  f.process.regs[101] = f.process.regs[100];
  f.process.regs[101].set_u64(Amd64Reg::rip, 0x401008);
  REQUIRE(contains(f.ask("bs"), pc_field(0x401016)));

  REQUIRE(f.ask("Hc65") == "OK");
  std::string other = f.ask("bs");
  CHECK(contains(other, "replaylog:begin;"));
  CHECK(contains(other, "thread:65;"));
  CHECK(contains(other, pc_field(0x401008)));
  // Thread 101's registers are its live ones; thread 100 is still in its past.
  REQUIRE(f.ask("Hg65") == "OK");
  CHECK(f.ask("p0") == le_hex(0x1234));
  REQUIRE(f.ask("Hg64") == "OK");
  CHECK(f.ask("p10") == le_hex(0x401016));
}

TEST_CASE("monitor replay status tells each thread's position", "[replay]") {
  Fixture f;
  auto status = [&f] {
    auto reply = f.session.handle_packet("qRcmd," + hex_text("replay status"));
    REQUIRE(reply.payload == std::optional<std::string>("OK"));
    return reply.console;
  };
  CHECK(contains(status(), "Not replaying"));
  REQUIRE(f.ask("bs") != "");
  CHECK(contains(status(), "Thread 100: replaying at instruction 33 of 34"));
  CHECK(contains(status(), "0x401016"));
  auto help = f.session.handle_packet("qRcmd," + hex_text("help"));
  CHECK(contains(help.console, "replay"));
}

// gdb's record btrace begins in the present: enabling it in the past would
// have moved the thread there without a word (issue 27, item 3).
TEST_CASE("switching tracing on in the past is refused and the thread stays there", "[replay]") {
  Fixture f;
  REQUIRE(contains(f.ask("bs"), pc_field(0x401016)));
  REQUIRE(f.session.replaying(100));
  for (const char* packet : {"Qbtrace:bts", "Qbtrace:pt"}) {
    const std::string reply = f.ask(packet);
    CHECK(reply.rfind("E.", 0) == 0);
    CHECK(contains(reply, "starts only in the present"));
    CHECK(f.session.replaying(100));
    CHECK(f.ask("p10") == le_hex(0x401016));
  }
}

TEST_CASE("switching tracing off ends a replay first", "[replay]") {
  Fixture f;
  // The thread is traced already; gdb's record btrace adopts that trace.
  REQUIRE(f.ask("Qbtrace:bts") == "OK");
  REQUIRE(contains(f.ask("bs"), pc_field(0x401016)));
  REQUIRE(f.session.replaying(100));
  REQUIRE(f.ask("Qbtrace:off") == "OK");
  CHECK_FALSE(f.session.replaying(100));
  CHECK(f.ask("p10") == le_hex(0x401017));
}

TEST_CASE("qGetTLSAddr in the past: from the present where the past lacks libthread_db's data", "[replay][thread_db]") {
  Fixture f;
  test::use_fake_thread_db(f.session);
  f.process.memory[0x5000] = 1;  // nptl_version's string
  for (uint64_t a = 0x6000; a < 0x6008; ++a) f.process.memory[a] = 0;
  f.process.memory[0x6001] = 0x01;  // the 8 bytes at _thread_db_dtv: 0x100
  f.process.regs[100].set_u64(Amd64Reg::fs_base, 0x7000);
  REQUIRE(f.ask("qSymbol::") == protocol::reply_symbol_question("nptl_version"));
  REQUIRE(f.ask(test::symbol_known("nptl_version", 0x5000)) == protocol::reply_symbol_question("_thread_db_dtv"));
  REQUIRE(f.ask(test::symbol_known("_thread_db_dtv", 0x6000)) == protocol::reply_symbol_question("_thread_db_unused"));
  REQUIRE(f.ask(test::symbol_unknown("_thread_db_unused")) == "OK");
  CHECK(f.ask("qGetTLSAddr:64,10,0") == "7110");

  // In the past neither fs_base nor the bytes at 0x6000 are known (the
  // history does not determine them): the thread's block has not moved
  // since, so the address is the present's; gdb reads the value in the past.
  REQUIRE(f.ask("bs").rfind("T05", 0) == 0);
  REQUIRE(f.session.replaying(100));
  CHECK(f.ask("m6000,8") == "E01");
  CHECK(f.ask("qGetTLSAddr:64,10,0") == "7110");
  CHECK(f.session.replaying(100));
  CHECK(f.resumes() == 0);
}

}  // namespace test_replay_session
