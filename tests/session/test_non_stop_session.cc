// Non-stop mode through the session, against a fake with two threads that
// run and stop on their own: the exact payloads gdb would receive, and the
// `%Stop:` notifications queued for it.
#include <catch2/catch.hpp>

#include <csignal>
#include <set>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "protocol/replies.h"
#include "stub/session/session.h"

namespace test_non_stop_session {  // this file's own names, apart in a unity build

namespace {

using stub::process::ProcessEvent;
using stub::process::StepKind;

// Threads 100 (0x64) and 101 (0x65), each running or stopped on its own.
class NonStopProcess : public test::FakeProcess {
 public:
  bool non_stop = false;
  std::set<pid_t> running_threads;

  NonStopProcess() {
    threads_ = {100, 101};
    regs[101] = regs[100];
  }
  btstub::Expected<void> set_non_stop(bool on) override {
    non_stop = on;
    log.push_back(on ? "non-stop" : "all-stop");
    return {};
  }
  btstub::Expected<void> stop_thread(pid_t tid) override {
    log.push_back("stop " + std::to_string(tid));
    return {};
  }
  bool thread_running(pid_t tid) const override { return running_threads.count(tid) != 0; }
  bool has_running_threads() const override { return !running_threads.empty(); }
  btstub::Expected<void> resume(pid_t tid, StepKind kind, int signal) override {
    running_threads.insert(tid);
    return FakeProcess::resume(tid, kind, signal);
  }
  // The thread stops with `signal` (what the ptrace layer would report).
  void stops(pid_t tid, int signal, bool breakpoint = false) {
    running_threads.erase(tid);
    ProcessEvent event;
    event.tid = tid;
    event.signal = signal;
    event.software_breakpoint = breakpoint;
    events.push_back(event);
  }
};

struct Fixture {
  NonStopProcess process;
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  // Every queued event through the session; the notifications it sends.
  std::vector<std::string> deliver() {
    while (auto event = session.poll_event()) CHECK_FALSE(session.on_process_event(*event));
    std::vector<std::string> sent;
    while (auto notification = session.take_notification()) sent.push_back(*notification);
    return sent;
  }
  void start() {
    ask("qSupported:multiprocess+;swbreak+;no-resumed+");
    REQUIRE(ask("QNonStop:1") == "OK");
  }
};

const std::string kMainTrap = "T0506:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p64.64;";
const std::string kWorkerStopped = "T0006:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p64.65;";

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("non-stop: advertised, switched on and off in every process", "[session][nonstop]") {
  Fixture f;
  CHECK(contains(f.ask("qSupported:multiprocess+"), "QNonStop+"));
  CHECK(f.ask("QNonStop:0") == "OK");  // all-stop already: nothing to do
  CHECK(f.process.log.empty());
  CHECK(f.ask("QNonStop:1") == "OK");
  CHECK(f.process.non_stop);
  CHECK(f.ask("QNonStop:0") == "OK");
  CHECK_FALSE(f.process.non_stop);
  CHECK(f.ask("QNonStop:2").rfind("E.", 0) == 0);
}

TEST_CASE("non-stop: a process that cannot do it refuses QNonStop:1 with its reason", "[session][nonstop]") {
  test::FakeProcess plain;
  stub::session::Session session{stub::session::SessionConfig{}, &plain};
  auto reply = session.handle_packet("QNonStop:1");
  CHECK(reply.payload == "E.Non-stop mode is not supported");
  CHECK_FALSE(session.non_stop);
  CHECK(session.handle_packet("QNonStop:0").payload == "OK");
}

TEST_CASE("non-stop: `?` lists every stopped thread, vStopped drains them", "[session][nonstop]") {
  Fixture f;
  f.start();
  // A fresh program: its first thread's SIGTRAP; the other one, never
  // reported, is not listed (gdbserver lists only threads it saw stop).
  CHECK(f.ask("?") == kMainTrap);
  CHECK(f.ask("vStopped") == "OK");
  // Once both stopped and were reported, both are listed.
  CHECK(f.ask("vCont;c") == "OK");
  f.process.stops(101, 0);
  f.process.stops(100, SIGTRAP);
  CHECK(f.deliver().size() == 1);
  CHECK(f.ask("vStopped") == kMainTrap);
  CHECK(f.ask("vStopped") == "OK");
  CHECK(f.ask("?") == kWorkerStopped.substr(0, 0) + kMainTrap);
  CHECK(f.ask("vStopped") == kWorkerStopped);
  CHECK(f.ask("vStopped") == "OK");
  CHECK(f.ask("vStopped") == "OK");
}

TEST_CASE("non-stop: resumes answer OK, each stop comes as a notification", "[session][nonstop]") {
  Fixture f;
  f.start();
  CHECK(f.ask("vCont;c") == "OK");
  CHECK(f.process.log == std::vector<std::string>{"non-stop", "resume 100 cont 0", "resume 101 cont 0"});
  CHECK(f.session.running());
  f.process.stops(101, SIGTRAP, true);
  f.process.stops(100, SIGINT);
  auto sent = f.deliver();
  REQUIRE(sent.size() == 1);  // the second waits in the queue
  CHECK(sent[0] == "Stop:T0506:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p64.65;swbreak:;");
  CHECK(f.ask("vStopped") == "T0206:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p64.64;");
  CHECK(f.ask("vStopped") == "OK");
  CHECK_FALSE(f.session.running());
  // The selected thread stays the client's choice.
  CHECK(f.session.general_thread == 0);
}

TEST_CASE("non-stop: one thread runs while the other is stopped and readable", "[session][nonstop]") {
  Fixture f;
  f.start();
  CHECK(f.ask("vCont;c:p64.65") == "OK");
  CHECK(f.process.thread_running(101));
  CHECK_FALSE(f.process.thread_running(100));
  CHECK(f.ask("Hgp64.64") == "OK");
  CHECK(f.ask("g").rfind("E", 0) != 0);
  CHECK(f.ask("Hgp64.65") == "OK");
  CHECK(f.ask("g") == "E.The program is running");
  CHECK(f.ask("qfThreadInfo") == "mp64.64,p64.65");
  // vCont;t stops the running thread; its stop comes as T00.
  CHECK(f.ask("vCont;t:p64.65") == "OK");
  CHECK(f.process.log.back() == "stop 101");
  f.process.stops(101, 0);
  CHECK(f.deliver() == std::vector<std::string>{"Stop:" + kWorkerStopped});
  CHECK(f.ask("vStopped") == "OK");
}

TEST_CASE("non-stop: a resume of every thread leaves one with an unacknowledged stop", "[session][nonstop]") {
  Fixture f;
  f.start();
  CHECK(f.ask("vCont;c") == "OK");
  f.process.stops(101, SIGTRAP, true);
  f.process.stops(100, SIGTRAP, true);
  CHECK(f.deliver().size() == 1);
  f.process.log.clear();
  // Both stops are queued (the client acked neither): `continue -a` resumes neither.
  CHECK(f.ask("vCont;c") == "OK");
  CHECK(f.process.log.empty());
  // Naming the thread resumes it.
  CHECK(f.ask("vCont;c:p64.64") == "OK");
  CHECK(f.process.log == std::vector<std::string>{"resume 100 cont 0"});
}

// gdbserver's vCtrlC queues a SIGINT whether or not a thread runs: the
// next resume takes it.
TEST_CASE("non-stop: vCtrlC while every thread stands is owed to the next resume", "[session][nonstop]") {
  Fixture f;
  f.start();
  CHECK(f.ask("vCtrlC") == "OK");
  CHECK(f.process.log.back() == "non-stop");  // nothing sent yet
  CHECK(f.ask("vCont;c:p64.65") == "OK");
  CHECK(f.process.log.back() == "interrupt");
  CHECK_FALSE(f.session.interrupt_owed());
}

TEST_CASE("non-stop: the process's exit is a W notification", "[session][nonstop]") {
  Fixture f;
  f.start();
  CHECK(f.ask("vCont;c") == "OK");
  f.process.running_threads.clear();
  ProcessEvent exited;
  exited.kind = ProcessEvent::Kind::Exited;
  exited.tid = 100;
  exited.exit_code = 3;
  f.process.events.push_back(exited);
  CHECK(f.deliver() == std::vector<std::string>{"Stop:W03;process:64"});
  CHECK_FALSE(f.session.has_process());
  CHECK(f.ask("vStopped") == "OK");
}

// gdbserver's get_detach_signal reads each thread's own last status: two
// threads stopped by two signals both get theirs back at the detach.
TEST_CASE("non-stop: detach gives each stopped thread the signal it was reported with", "[session][nonstop]") {
  Fixture f;
  f.start();
  CHECK(f.ask("vCont;c") == "OK");
  f.process.stops(100, SIGUSR1);
  f.process.stops(101, SIGUSR2);
  CHECK(f.deliver().size() == 1);
  CHECK(f.ask("vStopped") != "OK");
  CHECK(f.ask("vStopped") == "OK");
  f.process.log.clear();
  CHECK(f.ask("D") == "OK");
  CHECK(f.process.log == std::vector<std::string>{"deliver on detach 100 " + std::to_string(SIGUSR1),
                                                  "deliver on detach 101 " + std::to_string(SIGUSR2), "detach"});
}

TEST_CASE("non-stop: btstub's history features are refused with a reason", "[session][nonstop]") {
  Fixture f;
  test::FakeTraceBackend backend;
  f.session.trace_backend = &backend;
  REQUIRE(backend.enable_all());
  f.ask("qSupported:multiprocess+");
  CHECK(f.ask("QNonStop:1").rfind("E.Non-stop mode is not supported while btstub records branches", 0) == 0);
  CHECK_FALSE(f.session.non_stop);
  backend.disable_all();
  CHECK(f.ask("QNonStop:1") == "OK");
  CHECK(f.ask("bc") == "E.reverse execution is not supported in non-stop mode");
  CHECK(f.ask("Hgp64.64") == "OK");
  // gdb's own record btrace (it replays itself) is served in non-stop mode.
  CHECK(f.ask("Qbtrace:bts") == "OK");
}

TEST_CASE("non-stop: vCont;t of a thread stopped but never reported tells its stop", "[session][nonstop]") {
  Fixture f;
  f.start();
  // No `?` yet (as after vAttach in non-stop mode): gdb stops every thread.
  CHECK(f.ask("vCont;t:p64.-1") == "OK");
  CHECK(f.deliver() == std::vector<std::string>{
                           "Stop:T0006:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p64.64;"});
  CHECK(f.ask("vStopped") == kWorkerStopped);
  CHECK(f.ask("vStopped") == "OK");
  // Told once: another vCont;t of a stopped thread says nothing.
  CHECK(f.ask("vCont;t:p64.65") == "OK");
  CHECK(f.deliver().empty());
}

}  // namespace test_non_stop_session
