// PtraceProcess in non-stop mode against tests/programs/non_stop.c: one
// thread stopped with stop_thread while the other runs on.
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "stub/process/ptrace_process.h"

namespace test_ptrace_non_stop {  // this file's own names, apart in a unity build

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

// Where `symbol` of the launched test program is: its load address (the
// first mapping of the executable) plus its offset in the file's symbol
// table, as nm lists it; 0 when nm is missing.
uint64_t symbol_address(pid_t pid, const std::string& program, const std::string& symbol) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  uint64_t base = 0;
  while (std::getline(maps, line)) {
    if (line.find(program) == std::string::npos) continue;
    base = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    break;
  }
  FILE* nm = ::popen(("nm " + program + " 2>/dev/null").c_str(), "r");
  if (nm == nullptr) return 0;
  char buf[512];
  uint64_t offset = 0;
  while (std::fgets(buf, sizeof buf, nm) != nullptr) {
    std::string entry(buf);
    const std::string suffix = " " + symbol + "\n";
    if (entry.size() > suffix.size() && entry.compare(entry.size() - suffix.size(), std::string::npos, suffix) == 0) {
      offset = std::stoull(entry.substr(0, entry.find(' ')), nullptr, 16);
    }
  }
  ::pclose(nm);
  return offset == 0 || base == 0 ? 0 : base + offset;
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

TEST_CASE("non-stop: a trap on a breakpoint removed before it was reaped is no stop", "[ptrace][nonstop]") {
  const std::string program = PROGRAMS_DIR "/non_stop_O0";
  LaunchOptions options;
  options.argv = {program};
  auto launched = PtraceProcess::launch(options);
  REQUIRE(launched.ok());
  PtraceProcess& process = **launched;
  REQUIRE(process.set_non_stop(true).ok());
  REQUIRE(process.resume(process.pid(), StepKind::Continue, 0).ok());
  for (int i = 0; i < 500 && process.threads().size() < 2; ++i) {
    CHECK_FALSE(process.poll_event().has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(process.threads().size() >= 2);
  const pid_t worker = process.threads()[1];
  const uint64_t tick = symbol_address(process.pid(), program, "T tick");
  if (tick == 0) {
    WARN("nm is missing: cannot find tick()");
    return;
  }
  REQUIRE(process.insert_breakpoint(tick).ok());
  // The worker calls tick() every millisecond: it traps now, unreaped,
  // and then the client removes the breakpoint.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::ifstream stat("/proc/" + std::to_string(process.pid()) + "/task/" + std::to_string(worker) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    UNSCOPED_INFO("worker stat: " << text.substr(text.rfind(')') + 2, 1));
    CHECK(text.substr(text.rfind(')') + 2, 1) == "t");  // in its trap's stop, unreaped
  }
  REQUIRE(process.remove_breakpoint(tick).ok());
  for (int i = 0; i < 30; ++i) {
    auto event = process.poll_event();
    INFO("tid " << (event ? event->tid : 0) << " signal " << (event ? event->signal : 0));
    CHECK_FALSE(event.has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(process.thread_running(worker));
  // A breakpoint still there is reported as one.
  REQUIRE(process.insert_breakpoint(tick).ok());
  auto hit = next_event(process);
  REQUIRE(hit.has_value());
  CHECK(hit->tid == worker);
  CHECK(hit->software_breakpoint);
  CHECK(process.kill().ok());
}

}  // namespace test_ptrace_non_stop
