// Two processes debugged at once (detach-on-fork off) against a real
// program: tests/programs/fork_threads.c forks while it has a second thread,
// so the parent's waits for any tracee also reap the child's statuses; they
// must reach the child (stub/process/wait_routes.h) or the child never ends.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "stub/process/process_group.h"
#include "stub/process/ptrace_process.h"
#include "stub/process/wait_routes.h"

namespace test_fork_processes {  // this file's own names, apart in a unity build

namespace {

using stub::process::ProcessEvent;
using stub::process::StepKind;

// Every thread of every process in the group continues; a signal stop's
// signal is delivered to its thread.
void resume_all(stub::process::ProcessGroup& group, const ProcessEvent* last) {
  for (stub::process::Process* process : group.live()) {
    for (pid_t tid : process->threads()) {
      int signal = 0;
      if (last != nullptr && last->tid == tid && last->kind == ProcessEvent::Kind::Stopped &&
          last->signal != SIGTRAP && last->signal != SIGSTOP) {
        signal = last->signal;
      }
      (void)process->resume(tid, StepKind::Continue, signal);
    }
  }
}

std::optional<ProcessEvent> next_event(stub::process::ProcessGroup& group) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto event = group.poll_event()) return event;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("a fork child debugged beside a threaded parent gets its own wait statuses", "[fork]") {
  stub::process::LaunchOptions options;
  options.argv = {std::string(PROGRAMS_DIR) + "/fork_threads_O0"};
  options.stdio_to_stderr = true;
  auto launched = stub::process::PtraceProcess::launch(options);
  REQUIRE(launched.ok());
  std::unique_ptr<stub::process::PtraceProcess> parent = std::move(*launched);
  parent->set_fork_events(true, false);
  stub::process::ProcessGroup group;
  group.reset(parent.get());

  resume_all(group, nullptr);
  pid_t child = 0;
  std::optional<ProcessEvent> event;
  while (child == 0) {
    event = next_event(group);
    REQUIRE(event.has_value());
    REQUIRE(event->kind == ProcessEvent::Kind::Stopped);
    if (event->fork_child != 0) {
      child = event->fork_child;
      auto adopted = parent->adopt_fork_child();
      REQUIRE(adopted.ok());
      group.add(std::move(*adopted));
    }
    resume_all(group, &*event);
  }
  REQUIRE(group.live().size() == 2);
  CHECK(parent->threads().size() == 2);  // waits for any tracee from here on

  bool parent_exited = false;
  bool child_exited = false;
  while (!(parent_exited && child_exited)) {
    event = next_event(group);
    REQUIRE(event.has_value());
    if (event->kind == ProcessEvent::Kind::Exited) {
      CHECK(event->exit_code == 0);
      if (event->pid == child) child_exited = true;
      if (event->pid == parent->pid()) parent_exited = true;
      group.remove(group.find(event->pid));
    } else {
      // Any stop names a thread of the process it came from.
      stub::process::Process* owner = group.find(event->pid);
      REQUIRE(owner != nullptr);
      CHECK(group.owner_of(event->tid) == owner);
    }
    resume_all(group, &*event);
  }
  CHECK(group.empty());
}

// A stop of one of our threads that another debugged process's wait for
// any tracee reaped (handed over through WaitRoutes) must count as in hand
// when the tracer's int3 under another thread is stepped with the others
// held: asking waitpid for that thread's stop again would block for good
// (the alarm then ends the test).
TEST_CASE("stepping past the tracer's int3 does not wait again for a stop handed over", "[fork][trace]") {
  stub::process::LaunchOptions options;
  options.argv = {std::string(PROGRAMS_DIR) + "/attach_threads_O0",
                  "/tmp/btstub_step_held_" + std::to_string(::getpid())};  // no .stop: runs until killed
  options.stdio_to_stderr = true;
  auto launched = stub::process::PtraceProcess::launch(options);
  REQUIRE(launched.ok());
  std::unique_ptr<stub::process::PtraceProcess> process = std::move(*launched);
  stub::process::ProcessGroup group;
  group.reset(process.get());
  const pid_t main_tid = process->pid();
  REQUIRE(process->resume(main_tid, StepKind::Continue, 0).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (process->threads().size() < 4 && std::chrono::steady_clock::now() < deadline) {
    REQUIRE_FALSE(process->poll_event().has_value());  // clones are absorbed
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(process->threads().size() == 4);
  REQUIRE(process->interrupt().ok());
  REQUIRE(next_event(group).has_value());  // everything stopped

  pid_t worker = 0;
  for (pid_t tid : process->threads()) {
    if (tid != main_tid) worker = tid;
  }
  auto regs = process->read_general_registers(main_tid);
  REQUIRE(regs.ok());
  REQUIRE(process->set_trace_breakpoint(main_tid, regs->get_u64(protocol::Amd64Reg::rip)).ok());
  REQUIRE(process->resume(worker, StepKind::Continue, 0).ok());
  // The worker stops; a wait that is not this process's reaps and hands it over.
  REQUIRE(::syscall(SYS_tgkill, main_tid, worker, SIGSTOP) == 0);
  int status = 0;
  REQUIRE(::waitpid(worker, &status, __WALL) == worker);
  stub::process::WaitRoutes::instance().hand_over(process.get(), worker, status);

  ::alarm(10);
  CHECK(process->resume(main_tid, StepKind::SingleStep, 0).ok());
  ::alarm(0);
  auto event = next_event(group);
  REQUIRE(event.has_value());
  CHECK((event->tid == worker || event->tid == main_tid));
}

namespace {

struct FakeOwner final : stub::process::WaitOwner {
  bool owns_thread(pid_t) const override { return false; }
};

}  // namespace

TEST_CASE("unclaimed statuses go with the only owner, and stay while another could claim them", "[fork]") {
  auto& routes = stub::process::WaitRoutes::instance();
  FakeOwner only;
  routes.enroll(&only);
  routes.keep_unclaimed(4000001, 0x137f);
  routes.forget_unclaimed_of(&only);  // e.g. it exited with a thread half created
  CHECK_FALSE(routes.take_unclaimed(4000001).has_value());

  FakeOwner other;
  routes.enroll(&other);
  routes.keep_unclaimed(4000002, 0x137f);
  routes.forget_unclaimed_of(&only);  // it may be `other`'s new thread
  CHECK(routes.take_unclaimed(4000002) == 0x137f);
  routes.leave(&other);
  routes.leave(&only);
}

}  // namespace test_fork_processes
