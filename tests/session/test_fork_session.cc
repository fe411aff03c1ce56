// Fork events through the session (fork-events+, vfork-events+) against a
// FakeProcess that holds a fork child: the exact payloads gdb receives, and
// where gdb's requests about the child end up.
#include <catch2/catch.hpp>
#include <algorithm>
#include <csignal>
#include <memory>
#include <set>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "stub/session/session.h"

namespace test_fork_session {  // this file's own names, apart in a unity build

namespace {

// A fork child debugged beside its parent; the session owns it and drops it
// once gone, so what it was asked is logged in its parent's log too.
class AdoptedChild : public test::FakeProcess {
 public:
  std::vector<std::string>* parent_log = nullptr;
  btstub::Expected<void> kill() override {
    parent_log->push_back("adopted kill " + std::to_string(pid_));
    return FakeProcess::kill();
  }
  btstub::Expected<void> detach() override {
    parent_log->push_back("adopted detach " + std::to_string(pid_));
    return FakeProcess::detach();
  }
};

class ForkingProcess : public test::FakeProcess {
 public:
  pid_t child = 0;
  bool fork_events = false;
  bool vfork_events = false;

  void set_fork_events(bool fork, bool vfork) override {
    fork_events = fork;
    vfork_events = vfork;
  }
  pid_t fork_child() const override { return child; }
  btstub::Expected<void> remove_fork_child_breakpoint(uint64_t addr) override {
    log.push_back("child remove " + std::to_string(addr));
    return {};
  }
  btstub::Expected<void> detach_fork_child() override {
    log.push_back("child detach " + std::to_string(child));
    child = 0;
    return {};
  }
  // detach-on-fork off: the child becomes a FakeProcess of its own, with
  // its own registers (rip 0x402000) and memory; `adopted` watches it.
  test::FakeProcess* adopted = nullptr;
  btstub::Expected<std::unique_ptr<stub::process::Process>> adopt_fork_child() override {
    log.push_back("adopt " + std::to_string(child));
    auto process = std::make_unique<AdoptedChild>();
    process->parent_log = &log;
    process->pid_ = child;
    process->threads_ = {child};
    process->regs.clear();
    process->regs[child] = regs[100];
    process->regs[child].set_u64(protocol::Amd64Reg::rip, 0x402000);
    process->memory[0x401000] = 0xaa;
    adopted = process.get();
    child = 0;
    return std::unique_ptr<stub::process::Process>(std::move(process));
  }
  btstub::Expected<void> follow_fork_child() override {
    log.push_back("follow " + std::to_string(child));
    pid_ = child;
    threads_ = {child};
    regs[child] = regs[100];
    child = 0;
    return {};
  }
};

struct Fixture {
  ForkingProcess process;
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  bool asks_to_close(std::string_view payload) { return session.handle_packet(payload).close_connection; }
  // A fork of thread 100 into child 0xc8 (200), reported while running.
  std::string fork_stop(bool vfork = false) {
    stub::process::ProcessEvent event;
    event.tid = 100;
    event.signal = SIGTRAP;
    event.fork_child = 200;
    event.vfork = vfork;
    process.child = 200;
    session.mark_running();
    auto payload = session.on_process_event(event);
    REQUIRE(payload.has_value());
    return *payload;
  }
  // detach-on-fork off: the fork stop, then gdb reads the child's registers
  // (Hg on it, g), which takes it on as a debugged process.
  void keep_child() {
    ask("qSupported:multiprocess+;fork-events+");
    fork_stop();
    CHECK(ask("Hgpc8.c8") == "OK");
    ask("g");
    REQUIRE(process.adopted != nullptr);
  }
};

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Process `pid` exited with code 0, as ProcessGroup reports it.
stub::process::ProcessEvent exit_of(pid_t pid) {
  stub::process::ProcessEvent event;
  event.pid = pid;
  event.tid = pid;
  event.kind = stub::process::ProcessEvent::Kind::Exited;
  return event;
}

}  // namespace

TEST_CASE("fork-events+ and vfork-events+ are advertised only when offered", "[session][fork]") {
  Fixture f;
  std::string reply = f.ask("qSupported:multiprocess+;fork-events+;vfork-events+");
  CHECK(contains(reply, "fork-events+"));
  CHECK(contains(reply, "vfork-events+"));
  CHECK(f.process.fork_events);
  CHECK(f.process.vfork_events);

  Fixture plain;
  std::string reply2 = plain.ask("qSupported:multiprocess+");
  CHECK_FALSE(contains(reply2, "fork-events+"));
  CHECK_FALSE(plain.process.fork_events);
  CHECK_FALSE(plain.process.vfork_events);
}

TEST_CASE("fork, vfork and vforkdone stop replies name the child", "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+;vfork-events+");
  CHECK(contains(f.fork_stop(), "thread:p64.64;fork:pc8.c8;"));
  CHECK(contains(f.fork_stop(true), "thread:p64.64;vfork:pc8.c8;"));
  stub::process::ProcessEvent done;
  done.tid = 100;
  done.signal = SIGTRAP;
  done.vfork_done = true;
  f.session.mark_running();
  auto payload = f.session.on_process_event(done);
  REQUIRE(payload.has_value());
  CHECK(contains(*payload, "T05"));
  CHECK(contains(*payload, "vforkdone:;"));
}

TEST_CASE("z0 after Hg on the held child removes the child's int3 only; D;child lets it go", "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.process.memory[0x401000] = 0x55;
  f.fork_stop();
  CHECK(f.ask("Hgpc8.c8") == "OK");
  CHECK(f.ask("z0,401000,1") == "OK");
  CHECK(f.ask("Hgp64.64") == "OK");
  CHECK(f.ask("z0,401000,1") == "OK");
  CHECK_FALSE(f.asks_to_close("D;c8"));
  CHECK(f.process.log == std::vector<std::string>{"child remove 4198400", "remove 4198400", "child detach 200"});
  CHECK(f.session.has_process());
}

TEST_CASE("D of the parent while a child is held follows the child", "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.fork_stop();
  CHECK_FALSE(f.asks_to_close("D;64"));
  CHECK(f.process.log == std::vector<std::string>{"follow 200"});
  CHECK(f.ask("Hgpc8.c8") == "OK");
  CHECK(f.ask("qfThreadInfo") == "mpc8.c8");
  auto resumed = f.session.handle_packet("vCont;c:pc8.-1");
  CHECK_FALSE(resumed.payload.has_value());  // the child runs; its stop comes later
  CHECK(f.process.log.back() == "resume 200 cont 0");
}

// Whether a `g` reply holds this rip (after the 16 general registers, little-endian).
bool shows_rip(const std::string& g, uint64_t rip) {
  char le[17];
  std::snprintf(le, sizeof le, "%02x%02x%02x0000000000", unsigned(rip & 0xff), unsigned((rip >> 8) & 0xff),
                unsigned((rip >> 16) & 0xff));
  return g.size() >= 16 * 16 + 16 && g.substr(16 * 16, 16) == le;
}

TEST_CASE("detach-on-fork off: the held child becomes a second process on its first register read",
          "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.process.memory[0x401000] = 0x55;
  f.fork_stop();
  CHECK(f.ask("Hgpc8.c8") == "OK");
  CHECK(f.ask("z0,401000,1") == "OK");  // gdb's detach_breakpoints: the child's inherited int3
  std::string child_regs = f.ask("g");
  REQUIRE(f.process.adopted != nullptr);
  INFO(child_regs);
  CHECK(shows_rip(child_regs, 0x402000));
  CHECK(f.ask("m401000,1") == "aa");  // the child's memory, not the parent's
  CHECK(f.ask("qfThreadInfo") == "mp64.64,pc8.c8");
  CHECK(f.ask("Hgp64.64") == "OK");
  CHECK(shows_rip(f.ask("g"), 0x401000));
  CHECK(f.ask("m401000,1") == "55");
  CHECK(f.ask("Hgpc8.c8") == "OK");
  CHECK(f.ask("Z0,401000,1") == "OK");
  CHECK(f.process.adopted->log == std::vector<std::string>{"insert 4198400"});

  // schedule-multiple on: one vCont resumes both.
  CHECK_FALSE(f.session.handle_packet("vCont;c").payload.has_value());
  CHECK(f.process.log.back() == "resume 100 cont 0");
  CHECK(f.process.adopted->log.back() == "resume 200 cont 0");
  stub::process::ProcessEvent hit;
  hit.pid = 200;
  hit.tid = 200;
  hit.signal = SIGTRAP;
  hit.software_breakpoint = true;
  auto stop = f.session.on_process_event(hit);
  REQUIRE(stop.has_value());
  CHECK(contains(*stop, "thread:pc8.c8;"));

  // The child exits: the parent is still debugged, and the session goes on.
  f.session.mark_running();
  auto gone = f.session.on_process_event(exit_of(200));
  REQUIRE(gone.has_value());
  CHECK(*gone == "W00;process:c8");
  CHECK(f.session.has_process());
  CHECK(f.ask("qfThreadInfo") == "mp64.64");
}

TEST_CASE("detach-on-fork off: vCont naming one process resumes only it; vKill and D take one process",
          "[session][fork]") {
  Fixture f;
  f.keep_child();
  test::FakeProcess& child = *f.process.adopted;

  CHECK_FALSE(f.session.handle_packet("vCont;c:p64.-1").payload.has_value());
  CHECK(f.process.log.back() == "resume 100 cont 0");
  CHECK(child.log.empty());  // schedule-multiple off: the child stays stopped
  stub::process::ProcessEvent stopped;
  stopped.pid = 100;
  stopped.tid = 100;
  stopped.signal = SIGTRAP;
  REQUIRE(f.session.on_process_event(stopped).has_value());
  CHECK_FALSE(f.session.handle_packet("vCont;c:pc8.-1").payload.has_value());
  CHECK(child.log.back() == "resume 200 cont 0");
  stopped.pid = 200;
  stopped.tid = 200;
  REQUIRE(f.session.on_process_event(stopped).has_value());

  // vKill;c8 kills the child only; the connection stays.
  auto killed = f.session.handle_packet("vKill;c8");
  CHECK(killed.payload == std::string("OK"));
  CHECK(f.process.log.back() == "adopted kill 200");
  CHECK_FALSE(killed.close_connection);
  CHECK(f.session.has_process());
  CHECK(f.ask("qfThreadInfo") == "mp64.64");
  CHECK(f.ask("Hgpc8.c8").rfind("E", 0) == 0);  // gone
  CHECK(f.ask("vKill;c8").rfind("E", 0) == 0);
  // D;64 detaches the last process: the connection ends.
  CHECK(f.asks_to_close("D;64"));
  CHECK(f.process.log.back() == "detach");
  CHECK_FALSE(f.session.has_process());
}

TEST_CASE("detach-on-fork off: D;child detaches the adopted child alone", "[session][fork]") {
  Fixture f;
  f.keep_child();
  CHECK_FALSE(f.asks_to_close("D;c8"));
  CHECK(f.process.log.back() == "adopted detach 200");
  CHECK(f.ask("qfThreadInfo") == "mp64.64");
  CHECK(f.session.has_process());
}

TEST_CASE("detach-on-fork off: btrace packets for the kept child's thread are a clear error", "[session][fork]") {
  Fixture f;
  test::FakeTraceBackend backend;
  f.session.trace_backend = &backend;
  f.keep_child();
  const std::string refused =
      "E.Branch tracing is not available for process 200: btstub traces only the program it started or attached to.";
  CHECK(f.ask("Qbtrace:bts") == refused);
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == refused);
  CHECK(backend.log.empty());
  CHECK(f.ask("Hgp64.64") == "OK");
  CHECK(f.ask("Qbtrace:bts") == "OK");
}

TEST_CASE("detach-on-fork off: k kills both processes, plain D detaches both", "[session][fork]") {
  for (const char* packet : {"k", "D"}) {
    Fixture f;
    f.keep_child();
    auto reply = f.session.handle_packet(packet);
    CHECK(reply.close_connection);
    CHECK_FALSE(f.session.has_process());
    const std::string verb = packet == std::string("k") ? "kill" : "detach";
    CHECK(f.process.log == std::vector<std::string>{"adopt 200", verb, "adopted " + verb + " 200"});
  }
}

TEST_CASE("detach-on-fork off: a child still held outlives its parent's exit and vKill", "[session][fork]") {
  for (const char* how : {"exit", "vKill;64"}) {
    Fixture f;
    f.ask("qSupported:multiprocess+;fork-events+");
    f.fork_stop();  // gdb asks nothing about the child (schedule-multiple off)
    if (how == std::string("exit")) {
      CHECK_FALSE(f.session.handle_packet("vCont;c:p64.-1").payload.has_value());
      auto gone = f.session.on_process_event(exit_of(100));
      REQUIRE(gone.has_value());
      CHECK(*gone == "W00;process:64");
    } else {
      auto killed = f.session.handle_packet(how);
      CHECK(killed.payload == std::string("OK"));
      CHECK_FALSE(killed.close_connection);
    }
    INFO(how);
    REQUIRE(f.process.adopted != nullptr);
    CHECK(f.session.has_process());
    CHECK(f.ask("qfThreadInfo") == "mpc8.c8");
    // gdb's `inferior 2` + `continue`.
    CHECK(f.ask("Hgpc8.c8") == "OK");
    CHECK_FALSE(f.session.handle_packet("vCont;c:pc8.-1").payload.has_value());
    CHECK(f.process.adopted->log.back() == "resume 200 cont 0");
  }
}

TEST_CASE("detach-on-fork off: k kills a child still held too", "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.fork_stop();
  CHECK(f.session.handle_packet("k").close_connection);
  CHECK_FALSE(f.session.has_process());
  CHECK(f.process.log == std::vector<std::string>{"adopt 200", "kill", "adopted kill 200"});
}

TEST_CASE("detach-on-fork off: Ctrl-C reaches the process that runs", "[session][fork]") {
  Fixture f;
  f.keep_child();
  // schedule-multiple off, `inferior 2` + `continue`: the child runs alone.
  CHECK_FALSE(f.session.handle_packet("vCont;c:pc8.-1").payload.has_value());
  f.session.on_interrupt();
  CHECK(f.process.adopted->log.back() == "interrupt");
  CHECK(std::count(f.process.log.begin(), f.process.log.end(), "interrupt") == 0);
}

TEST_CASE("detach-on-fork off: a resume of every process takes a held child along", "[session][fork]") {
  for (const char* packet : {"vCont;c", "c", "vCont;c:p-1.-1"}) {
    INFO(packet);
    Fixture f;
    f.ask("qSupported:multiprocess+;fork-events+");
    f.fork_stop();  // schedule-multiple on, and gdb asks nothing about the child first
    CHECK_FALSE(f.session.handle_packet(packet).payload.has_value());
    REQUIRE(f.process.adopted != nullptr);
    CHECK(f.process.log.back() == "resume 100 cont 0");
    CHECK(f.process.adopted->log == std::vector<std::string>{"resume 200 cont 0"});
  }
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.fork_stop();
  CHECK_FALSE(f.session.handle_packet("vCont;c:p64.-1").payload.has_value());
  CHECK(f.process.adopted == nullptr);  // schedule-multiple off: the child stays held
  CHECK(f.process.fork_child() == 200);
}

TEST_CASE("detach-on-fork off: the kept child's breakpoints are not the replay's", "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.process.memory[0x401000] = 0x55;
  f.fork_stop();
  CHECK(f.ask("Hgpc8.c8") == "OK");
  f.ask("g");
  REQUIRE(f.process.adopted != nullptr);
  CHECK(f.ask("Z0,401000,1") == "OK");
  CHECK(f.session.software_breakpoints.empty());
  CHECK(f.ask("Hgp64.64") == "OK");
  CHECK(f.ask("Z0,401000,1") == "OK");
  CHECK(f.session.software_breakpoints == std::set<uint64_t>{0x401000});
  CHECK(f.ask("Hgpc8.c8") == "OK");
  CHECK(f.ask("z0,401000,1") == "OK");  // the child's; the program's stays
  CHECK(f.session.software_breakpoints == std::set<uint64_t>{0x401000});
}

TEST_CASE("detach-on-fork off: reverse execution of the kept child's thread is a clear error", "[session][fork]") {
  Fixture f;
  test::FakeTraceBackend backend;
  f.session.trace_backend = &backend;
  f.keep_child();
  CHECK(f.ask("Hcpc8.c8") == "OK");
  const std::string refused =
      "E.Reverse execution is not available for process 200: btstub records only the program it started or "
      "attached to.";
  CHECK(f.ask("bs") == refused);
  CHECK(f.ask("bc") == refused);
  CHECK(backend.log.empty());
}

TEST_CASE("detach-on-fork off: plain D detaches every process even when one fails", "[session][fork]") {
  for (bool child_fails : {true, false}) {
    INFO(child_fails);
    Fixture f;
    f.keep_child();
    (child_fails ? f.process.adopted->fail_detach : f.process.fail_detach) = true;
    auto reply = f.session.handle_packet("D");
    REQUIRE(reply.payload.has_value());
    CHECK(*reply.payload == (child_fails ? "E.cannot detach 200" : "E.cannot detach 100"));
    CHECK(f.process.log == std::vector<std::string>{"adopt 200", "detach", "adopted detach 200"});
    CHECK_FALSE(f.session.has_process());
    CHECK(reply.close_connection);
  }
}

}  // namespace test_fork_session
