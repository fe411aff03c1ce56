// PtraceProcess against tests/programs/exit_streak.c: ended threads whose
// exits wait behind a streak of the leader's stops.
#include <dirent.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "stub/process/ptrace_process.h"

namespace test_ptrace_thread_exits {  // this file's own names, apart in a unity build

using stub::process::LaunchOptions;
using stub::process::ProcessEvent;
using stub::process::PtraceProcess;
using stub::process::StepKind;

namespace {

constexpr int kRounds = 40;  // exit_streak.c's ROUNDS

// The state letter of /proc/PID/task/TID/stat ('t': a ptrace stop, 'Z': ended,
// not reaped); '?' when it cannot be read.
char task_state(pid_t pid, pid_t tid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
}

std::vector<pid_t> tasks(pid_t pid) {
  std::vector<pid_t> tids;
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') tids.push_back(static_cast<pid_t>(std::stoi(entry->d_name)));
  }
  ::closedir(dir);
  return tids;
}

// Until the leader stands in its next stop and the thread it joined has
// ended: then the wait that follows finds both, the leader's first.
void wait_until_settled(pid_t pid) {
  for (int i = 0; i < 5000; ++i) {
    if (task_state(pid, pid) == 't') {
      for (pid_t tid : tasks(pid)) {
        if (tid != pid && task_state(pid, tid) == 'Z') return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

// Every round the leader's stop is reported first and the ended thread is
// reaped while stopping the others. Every kFairnessStreak-th stop in a row
// of the leader, the others' statuses are collected first: the ended
// thread's exit among them, which frees its tid. That thread was still
// listed at the stop, and reading its registers failed (ESRCH).
TEST_CASE("a thread that ended behind its leader's streak of stops is not listed at the stop", "[ptrace][threads]") {
  LaunchOptions options;
  options.argv = {PROGRAMS_DIR "/exit_streak_O0"};
  auto launched = PtraceProcess::launch(options);
  REQUIRE(launched.ok());
  PtraceProcess& process = **launched;
  const pid_t pid = process.pid();
  REQUIRE(process.resume(pid, StepKind::Continue, 0).ok());
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) wait_until_settled(pid);  // the first wait still has the thread creations to follow
    auto event = process.wait_event();
    INFO("round " << round);
    REQUIRE(event.ok());
    REQUIRE(event->kind == ProcessEvent::Kind::Stopped);
    REQUIRE(event->tid == pid);
    REQUIRE(event->signal == SIGTRAP);
    const std::vector<pid_t> threads = process.threads();
    for (pid_t tid : threads) {
      INFO("thread " << tid);
      REQUIRE(process.read_registers(tid).ok());
    }
    CHECK(threads.size() == static_cast<std::size_t>(kRounds - round));  // the leader and the threads not let go
    for (pid_t tid : threads) REQUIRE(process.resume(tid, StepKind::Continue, 0).ok());
  }
  auto end = process.wait_event();
  REQUIRE(end.ok());
  CHECK(end->kind == ProcessEvent::Kind::Exited);
  CHECK(end->exit_code == 0);
}

}  // namespace test_ptrace_thread_exits
