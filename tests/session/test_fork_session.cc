// Fork events through the session (fork-events+, vfork-events+) against a
// FakeProcess that holds a fork child: the exact payloads gdb receives, and
// where gdb's requests about the child end up.
#include <catch2/catch.hpp>
#include <csignal>

#include "fake_process.h"
#include "stub/session.h"

namespace {

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
  stub::Expected<void> remove_fork_child_breakpoint(uint64_t addr) override {
    log.push_back("child remove " + std::to_string(addr));
    return {};
  }
  stub::Expected<void> detach_fork_child() override {
    log.push_back("child detach " + std::to_string(child));
    child = 0;
    return {};
  }
  stub::Expected<void> follow_fork_child() override {
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
  stub::Session session{stub::SessionConfig{}, &process};

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  bool asks_to_close(std::string_view payload) { return session.handle_packet(payload).close_connection; }
  // A fork of thread 100 into child 0xc8 (200), reported while running.
  std::string fork_stop(bool vfork = false) {
    stub::ProcessEvent event;
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
};

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

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
  stub::ProcessEvent done;
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
  // The child's registers are not the parent's: refused, never faked.
  CHECK(f.ask("g").rfind("E.", 0) == 0);
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

TEST_CASE("resuming the held child is refused (detach-on-fork off)", "[session][fork]") {
  Fixture f;
  f.ask("qSupported:multiprocess+;fork-events+");
  f.fork_stop();
  std::string reply = f.ask("vCont;c:pc8.-1");
  CHECK(contains(reply, "detach-on-fork off is not supported"));
}
