// PtraceProcess in non-stop mode against tests/programs/non_stop.c: one
// thread stopped with stop_thread while the other runs on.
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <thread>

#include "stub/process/ptrace_process.h"

using stub::process::LaunchOptions;
using stub::process::ProcessEvent;
using stub::process::PtraceProcess;
using stub::process::StepKind;

namespace {

std::optional<ProcessEvent> next_event(PtraceProcess& process) {
  for (int i = 0; i < 500; ++i) {
    if (auto event = process.poll_event()) return event;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("non-stop: stop_thread stops one thread with signal 0, the other runs on", "[ptrace][nonstop]") {
  LaunchOptions options;
  options.argv = {PROGRAMS_DIR "/non_stop_O0"};
  auto launched = PtraceProcess::launch(options);
  REQUIRE(launched.ok());
  PtraceProcess& process = **launched;
  const pid_t main_tid = process.pid();
  REQUIRE(process.set_non_stop(true).ok());
  REQUIRE(process.resume(main_tid, StepKind::Continue, 0).ok());
  CHECK_FALSE(process.set_non_stop(false).ok());  // not while a thread runs
  for (int i = 0; i < 500 && process.threads().size() < 2; ++i) {
    CHECK_FALSE(process.poll_event().has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(process.threads().size() >= 2);
  const pid_t worker = process.threads()[1];
  CHECK(process.thread_running(worker));  // a new thread runs at once in non-stop mode

  REQUIRE(process.stop_thread(worker).ok());
  auto stopped = next_event(process);
  REQUIRE(stopped.has_value());
  CHECK(stopped->kind == ProcessEvent::Kind::Stopped);
  CHECK(stopped->tid == worker);
  CHECK(stopped->signal == 0);
  CHECK_FALSE(process.thread_running(worker));
  CHECK(process.thread_running(main_tid));
  CHECK(process.read_registers(worker).ok());  // readable while main runs
  CHECK(process.stop_thread(worker).ok());     // stopped already: nothing to do
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(process.poll_event().has_value());

  // The worker resumed and stopped again; then main.
  REQUIRE(process.resume(worker, StepKind::Continue, 0).ok());
  REQUIRE(process.stop_thread(main_tid).ok());
  auto main_stop = next_event(process);
  REQUIRE(main_stop.has_value());
  CHECK(main_stop->tid == main_tid);
  CHECK(main_stop->signal == 0);
  CHECK(process.thread_running(worker));
  REQUIRE(process.stop_thread(worker).ok());
  auto worker_stop = next_event(process);
  REQUIRE(worker_stop.has_value());
  CHECK(worker_stop->tid == worker);
  CHECK(worker_stop->signal == 0);
  CHECK(process.set_non_stop(false).ok());  // every thread stopped
  CHECK(process.kill().ok());
}
