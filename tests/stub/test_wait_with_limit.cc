// stub/process/ptrace_internal.h wait_with_limit: the wait for a copy of
// the program that may never stop (one re-run another way than the
// recording) gives up after its limit and kills the child, which it then
// reaps; a child that ends in time is reaped as by waitpid.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "stub/process/ptrace_internal.h"

namespace test_wait_with_limit {  // this file's own names, apart in a unity build

using stub::process::ptrace_detail::wait_with_limit;

TEST_CASE("wait_with_limit kills a child that does not change state in time") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (;;) {
    }
  }
  bool overdue = false;
  int status = 0;
  const auto began = std::chrono::steady_clock::now();
  const pid_t got = wait_with_limit(child, &status, __WALL, std::chrono::milliseconds(200), &overdue);
  const auto took = std::chrono::steady_clock::now() - began;
  CHECK(got == child);
  CHECK(overdue);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(took >= std::chrono::milliseconds(200));
  CHECK(took < std::chrono::seconds(10));
}

TEST_CASE("wait_with_limit reaps a child that ends in time, and its timer is off after") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(7);
  bool overdue = false;
  int status = 0;
  CHECK(wait_with_limit(child, &status, __WALL, std::chrono::milliseconds(5000), &overdue) == child);
  CHECK_FALSE(overdue);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
  // A sleep past where a timer left running would fire is not cut short.
  const auto began = std::chrono::steady_clock::now();
  ::usleep(300000);
  CHECK(std::chrono::steady_clock::now() - began >= std::chrono::milliseconds(300));
}

}  // namespace test_wait_with_limit
