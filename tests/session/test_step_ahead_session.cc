// The step run ahead of the client (stub/session/step_ahead.h) through the session,
// against a fake whose single step really runs one of three instructions.
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <set>

#include "fake_process.h"
#include "stub/session/session.h"

namespace test_step_ahead_session {  // this file's own names, apart in a unity build

namespace {

using protocol::Amd64Reg;

constexpr uint64_t kRbp = 0x7ffe0100;
constexpr uint64_t kSlot = kRbp - 8;  // what `mov %rax,-0x8(%rbp)` writes

// A loop: 0x401000 add $1,%rax; 0x401004 mov %rax,-0x8(%rbp); 0x401008 jmp
// 0x401000. Apart: 0x401010 add $1,%rax; 0x401014 syscall.
// Step number `signal_on_step` (counting from 1) instead ends in
// `step_signal` with the pc unchanged: a signal sent meanwhile (si_code 0)
// or raised by the instruction (> 0).
class SteppingProcess : public test::FakeProcess {
 public:
  int signal_on_step = 0;
  int step_signal = 0;
  int step_signal_code = 0;
  bool shared_stack = false;
  std::vector<std::string> siginfo_writes;

  SteppingProcess() {
    const uint8_t code[] = {0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x45, 0xf8, 0xeb, 0xf6,
                            0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x48, 0x83, 0xc0, 0x01, 0x0f, 0x05};
    for (std::size_t i = 0; i < sizeof code; ++i) memory[0x401000 + i] = code[i];
    for (uint64_t a = 0x7ffe0000; a < 0x7ffe1000; ++a) memory[a] = 0;
    regs[100].set_u64(Amd64Reg::rbp, kRbp);
    regs[100].set_u64(Amd64Reg::rax, 0x1122334455667788);
  }

  uint64_t pc() { return regs[100].get_u64(Amd64Reg::rip); }
  uint64_t slot() {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | memory[kSlot + i];
    return v;
  }
  int steps() const {
    return static_cast<int>(std::count(log.begin(), log.end(), std::string("resume 100 step 0")));
  }

  btstub::Expected<void> resume(pid_t tid, stub::process::StepKind kind, int signal) override {
    (void)FakeProcess::resume(tid, kind, signal);
    if (kind != stub::process::StepKind::SingleStep) return {};
    passed_at_steps.push_back(passed.size());
    stub::process::ProcessEvent event;
    event.tid = tid;
    if (steps() == signal_on_step) {
      event.signal = step_signal;
      events.push_back(event);
      return {};
    }
    auto& r = regs[tid];
    const uint64_t rax = r.get_u64(Amd64Reg::rax);
    const uint64_t pc_now = pc();
    uint64_t next = pc_now + 4;
    if (pc_now == 0x401000 || pc_now == 0x401010) r.set_u64(Amd64Reg::rax, rax + 1);
    if (pc_now == 0x401004) {
      for (int i = 0; i < 8; ++i) memory[kSlot + i] = static_cast<uint8_t>(rax >> (8 * i));
    }
    if (pc_now == 0x401008) next = 0x401000;
    if (pc_now == 0x401014) next = 0x401016;
    r.set_u64(Amd64Reg::rip, next);
    event.signal = SIGTRAP;
    event.single_stepped = true;
    events.push_back(event);
    return {};
  }
  btstub::Expected<void> write_siginfo(pid_t, const std::vector<uint8_t>& info) override {
    siginfo_t si{};
    std::memcpy(&si, info.data(), std::min(info.size(), sizeof si));
    siginfo_writes.push_back(std::to_string(si.si_signo));
    return {};
  }
  bool gone = false;  // killed while stopped: ptrace finds no such thread
  std::set<int> passed;
  std::vector<std::size_t> passed_at_steps;  // how many signals the process passed at each step
  void set_pass_signals(const std::set<int>& signals) override { passed = signals; }
  std::vector<stub::process::MemoryMapping> mappings() const override {
    return {{0x401000, 0x402000, true, false, true, false, false, {}},
            {0x7ffe0000, 0x7ffe1000, true, true, false, shared_stack, false, {}}};
  }
  bool signal_queued = false;  // sent while stopped, not yet delivered
  btstub::Expected<bool> signal_waiting(pid_t) override {
    if (gone) return btstub::make_error(btstub::ErrorCode::NoProcess, "No such process");
    return signal_queued;
  }
  void keep_pending(const stub::process::ProcessEvent& event, const std::vector<uint8_t>&) override {
    log.push_back("keep_pending " + std::to_string(event.signal));
    events.push_front(event);
  }
  btstub::Expected<std::vector<uint8_t>> read_siginfo(pid_t) override {
    if (gone) return btstub::make_error(btstub::ErrorCode::NoProcess, "No such process");
    siginfo_t info{};
    info.si_signo = step_signal;
    info.si_code = step_signal_code;
    const auto* bytes = reinterpret_cast<const uint8_t*>(&info);
    return std::vector<uint8_t>(bytes, bytes + sizeof info);
  }
};

struct Fixture {
  SteppingProcess process;
  stub::session::Session session;

  explicit Fixture(bool step_ahead = true) : session(config(step_ahead), &process) {
    ask("qSupported:multiprocess+;swbreak+");
  }
  static stub::session::SessionConfig config(bool step_ahead) {
    stub::session::SessionConfig c;
    c.step_ahead = step_ahead;
    return c;
  }
  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  // A step the program really takes: its stop reply, then what the
  // connection does once the client has it.
  std::string step() {
    auto reply = session.handle_packet("vCont;s:p64.64");
    std::string stop;
    if (reply.payload) {
      stop = *reply.payload;
    } else {
      auto event = session.poll_event();
      REQUIRE(event.has_value());
      auto payload = session.on_process_event(*event);
      REQUIRE(payload.has_value());
      stop = *payload;
    }
    session.run_ahead();
    return stop;
  }
};

bool at(const std::string& stop, std::string_view pc_field) { return stop.find(pc_field) != std::string::npos; }

}  // namespace

TEST_CASE("the next step runs ahead and answers the client's step at once", "[step-ahead]") {
  Fixture f;
  std::string first = f.step();
  CHECK(at(first, "10:0410400000000000"));
  CHECK(f.process.steps() == 2);  // the one asked for, and the one ahead
  CHECK(f.process.pc() == 0x401008);

  std::string second = f.step();
  CHECK(second.rfind("T05", 0) == 0);
  CHECK(at(second, "10:0810400000000000"));
  CHECK(f.process.steps() == 3);  // answered at once; then the jmp ran ahead
  CHECK(f.process.pc() == 0x401000);
}

TEST_CASE("a system call is never run ahead", "[step-ahead]") {
  Fixture f;
  f.process.regs[100].set_u64(Amd64Reg::rip, 0x401010);
  std::string stop = f.step();
  CHECK(at(stop, "10:1410400000000000"));
  CHECK(f.process.steps() == 1);
  CHECK_FALSE(f.session.step_ahead.active());
}

TEST_CASE("what the step ahead wrote reads as before it; other requests undo it", "[step-ahead]") {
  Fixture f;
  f.step();                        // add: rax + 1; the mov runs ahead
  REQUIRE(f.process.slot() == 0x1122334455667789);
  CHECK(f.ask("m7ffe00f8,8") == "0000000000000000");
  CHECK(f.ask("m7ffe00f4,8") == "0000000000000000");  // overlapping only in part
  CHECK(f.ask("Z0,401000,1") == "OK");                 // gdb's breakpoints between steps keep it
  CHECK(f.process.pc() == 0x401008);

  std::string regs = f.ask("g");   // anything else sees the program where it stopped
  CHECK(regs.substr(16 * 16, 16) == "0410400000000000");  // rip, after the sixteen general registers
  CHECK(f.process.pc() == 0x401004);
  CHECK(f.process.slot() == 0);
  CHECK(f.process.steps() == 2);

  std::string stop = f.step();     // now a real step again (and the jmp ahead)
  CHECK(at(stop, "10:0810400000000000"));
  CHECK(f.process.steps() == 4);
  CHECK(f.process.slot() == 0x1122334455667789);
}

TEST_CASE("a different resume undoes the step ahead first", "[step-ahead]") {
  Fixture f;
  f.step();
  REQUIRE(f.process.pc() == 0x401008);
  auto reply = f.session.handle_packet("vCont;c:p64.-1");
  CHECK_FALSE(reply.payload.has_value());
  CHECK(f.process.pc() == 0x401004);
  CHECK(f.process.slot() == 0);
  CHECK(f.process.log.back() == "resume 100 cont 0");
}

// The client's Ctrl-C while stopped is the program's to report: the step
// runs for real and is interrupted.
TEST_CASE("an owed interrupt undoes the step ahead and runs the step", "[step-ahead]") {
  Fixture f;
  f.step();
  REQUIRE(f.process.pc() == 0x401008);
  f.session.on_interrupt();
  auto reply = f.session.handle_packet("vCont;s:p64.64");
  CHECK_FALSE(reply.payload.has_value());
  CHECK(f.process.steps() == 3);  // undone, then stepped again for real
  REQUIRE(f.process.log.size() >= 2);
  CHECK(f.process.log[f.process.log.size() - 2] == "resume 100 step 0");
  CHECK(f.process.log.back() == "interrupt");
}

TEST_CASE("no step runs ahead where it could be seen or not undone", "[step-ahead]") {
  SECTION("turned off") {
    Fixture f(false);
    f.step();
    CHECK(f.process.steps() == 1);
  }
  SECTION("a second thread could see the memory change") {
    Fixture f;
    f.process.threads_ = {100, 101};
    f.process.regs[101] = f.process.regs[100];
    f.step();
    CHECK(f.process.steps() == 1);
  }
  SECTION("the write goes to a shared mapping") {
    Fixture f;
    f.process.shared_stack = true;
    f.step();
    CHECK(f.process.steps() == 1);
  }
  SECTION("a hardware watchpoint could fire early") {
    struct Watched : SteppingProcess {
      bool hw_points_in_use() const override { return true; }
    };
    Watched process;
    stub::session::Session session(stub::session::SessionConfig{}, &process);
    (void)session.handle_packet("vCont;s:p64.64");
    auto event = session.poll_event();
    REQUIRE(event.has_value());
    (void)session.on_process_event(*event);
    session.run_ahead();
    CHECK(process.steps() == 1);
  }
}

TEST_CASE("a signal that stops the step ahead is kept for the next resume", "[step-ahead]") {
  Fixture f;
  f.process.signal_on_step = 2;  // the step ahead
  f.process.step_signal = SIGUSR1;
  f.process.step_signal_code = SI_USER;  // pending before, or sent meanwhile
  f.step();
  CHECK(f.process.steps() == 2);
  CHECK(f.process.log.back() == "keep_pending " + std::to_string(SIGUSR1));
  CHECK_FALSE(f.session.step_ahead.active());
  CHECK(f.ask("g").substr(16 * 16, 16) == "0410400000000000");  // nothing to undo: the mov did not run
  CHECK_FALSE(f.session.handle_packet("vCont;s:p64.64").payload.has_value());
  auto event = f.session.poll_event();  // the kept signal comes first
  REQUIRE(event.has_value());
  CHECK(event->signal == SIGUSR1);
}

TEST_CASE("a fault of the instruction run ahead is its step's stop, with nothing to undo", "[step-ahead]") {
  Fixture f;
  f.process.signal_on_step = 2;
  f.process.step_signal = SIGSEGV;
  f.process.step_signal_code = SEGV_MAPERR;
  f.step();
  REQUIRE(f.session.step_ahead.active());
  std::string stop = f.step();  // the client's step: that fault, at once
  CHECK(stop.rfind("T0b", 0) == 0);
  CHECK(at(stop, "10:0410400000000000"));
  CHECK(f.process.steps() == 2);

  Fixture g;
  g.process.signal_on_step = 2;
  g.process.step_signal = SIGSEGV;
  g.process.step_signal_code = SEGV_MAPERR;
  g.step();
  g.ask("g");  // undoing writes nothing: the instruction did not run
  CHECK(std::count(g.process.log.begin(), g.process.log.end(), std::string("write_registers 100")) == 0);
  CHECK_FALSE(g.session.step_ahead.active());
}

TEST_CASE("a client that reads registers after every step soon gets no step ahead", "[step-ahead]") {
  Fixture f;
  f.step();
  f.ask("g");  // the step ahead undone, once
  f.step();
  f.ask("g");  // and twice in a row: a pause
  const int before = f.process.steps();
  for (int i = 0; i < 8; ++i) f.step();
  CHECK(f.process.steps() == before + 8);  // only the steps asked for
  f.step();
  CHECK(f.process.steps() == before + 10);  // then one runs ahead again
}

TEST_CASE("the process passes no signal by itself during the step ahead", "[step-ahead]") {
  Fixture f;
  f.ask("QPassSignals:0e;0b");  // SIGALRM, SIGSEGV
  f.step();
  REQUIRE(f.process.passed_at_steps.size() == 2);
  CHECK(f.process.passed_at_steps[0] == 2);  // the client's step
  CHECK(f.process.passed_at_steps[1] == 0);  // the step ahead
  CHECK(f.process.passed.size() == 2);       // and back

  Fixture g;  // a fault the client passes is left to the client's step
  g.ask("QPassSignals:0b");
  g.process.signal_on_step = 2;
  g.process.step_signal = SIGSEGV;
  g.process.step_signal_code = SEGV_MAPERR;
  g.step();
  CHECK(g.process.steps() == 2);
  CHECK_FALSE(g.session.step_ahead.active());
}

TEST_CASE("undoing puts the thread's siginfo back", "[step-ahead]") {
  Fixture f;
  f.process.step_signal = SIGTRAP;  // what read_siginfo reports
  f.step();
  f.ask("g");
  CHECK(f.process.siginfo_writes == std::vector<std::string>{std::to_string(SIGTRAP)});
}

TEST_CASE("a program killed while a step is ahead is not answered from it", "[step-ahead]") {
  Fixture f;
  f.step();
  REQUIRE(f.session.step_ahead.active());
  f.process.gone = true;
  auto reply = f.session.handle_packet("vCont;s:p64.64");
  CHECK_FALSE(reply.payload.has_value());  // resumed for real: its death is the reply
  CHECK(f.process.steps() == 3);
}

TEST_CASE("a timer's signal with a kernel si_code is no fault of the instruction", "[step-ahead]") {
  Fixture f;
  f.process.signal_on_step = 2;
  f.process.step_signal = SIGALRM;
  f.process.step_signal_code = SI_KERNEL;  // what an interval timer's SIGALRM carries
  f.step();
  CHECK(f.process.log.back() == "keep_pending " + std::to_string(SIGALRM));
  CHECK_FALSE(f.session.step_ahead.active());
}

TEST_CASE("a signal queued while the client looks at a stop is met by a real step", "[step-ahead]") {
  Fixture f;
  f.process.signal_queued = true;  // already waiting: nothing runs ahead
  f.step();
  CHECK(f.process.steps() == 1);

  Fixture g;
  g.step();
  REQUIRE(g.session.step_ahead.active());
  g.process.signal_queued = true;  // sent after the step ahead ran
  auto reply = g.session.handle_packet("vCont;s:p64.64");
  CHECK_FALSE(reply.payload.has_value());  // undone, and stepped for real
  CHECK(g.process.pc() == 0x401008);
  CHECK(g.process.steps() == 3);
}

}  // namespace test_step_ahead_session
