// Two processes debugged at once (detach-on-fork off) against a real
// program: tests/programs/fork_threads.c forks while it has a second thread,
// so the parent's waits for any tracee also reap the child's statuses; they
// must reach the child (stub/wait_routes.h) or the child never ends.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "stub/process_group.h"
#include "stub/ptrace_process.h"

namespace {

using stub::ProcessEvent;
using stub::StepKind;

// Every thread of every process in the group continues; a signal stop's
// signal is delivered to its thread.
void resume_all(stub::ProcessGroup& group, const ProcessEvent* last) {
  for (stub::Process* process : group.live()) {
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

std::optional<ProcessEvent> next_event(stub::ProcessGroup& group) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto event = group.poll_event()) return event;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("a fork child debugged beside a threaded parent gets its own wait statuses", "[fork]") {
  stub::LaunchOptions options;
  options.argv = {std::string(PROGRAMS_DIR) + "/fork_threads_O0"};
  options.stdio_to_stderr = true;
  auto launched = stub::PtraceProcess::launch(options);
  REQUIRE(launched.ok());
  std::unique_ptr<stub::PtraceProcess> parent = std::move(*launched);
  parent->set_fork_events(true, false);
  stub::ProcessGroup group;
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
      stub::Process* owner = group.find(event->pid);
      REQUIRE(owner != nullptr);
      CHECK(group.owner_of(event->tid) == owner);
    }
    resume_all(group, &*event);
  }
  CHECK(group.empty());
}
