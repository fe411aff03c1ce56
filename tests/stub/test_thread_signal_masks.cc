// stub/process/thread_signal_masks.h: a thread's pending signals, its own
// and its process's, and the ones it blocks, read from /proc; unknown once
// the thread is gone. stub/process/restart_codes.h: the exact set of the
// kernel's restart codes.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "stub/process/restart_codes.h"
#include "stub/process/thread_signal_masks.h"

namespace test_thread_signal_masks {  // this file's own names, apart in a unity build

using stub::process::read_thread_signal_masks;

namespace {
constexpr uint64_t bit(int signal) { return uint64_t{1} << (signal - 1); }
}  // namespace

TEST_CASE("read_thread_signal_masks tells a thread's own pending signals from its process's, and its dispositions") {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGTRAP, [](int) {});
    ::syscall(SYS_tgkill, ::getpid(), ::getpid(), SIGUSR1);  // to this thread alone
    ::kill(::getpid(), SIGUSR2);                             // to the process
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);

  const auto masks = read_thread_signal_masks(child);
  REQUIRE(masks.has_value());
  CHECK(masks->thread_pending == bit(SIGUSR1));
  CHECK(masks->shared_pending == bit(SIGUSR2));
  CHECK((masks->blocked & (bit(SIGUSR1) | bit(SIGUSR2))) == (bit(SIGUSR1) | bit(SIGUSR2)));
  CHECK(masks->unblocked_pending() == 0);  // both blocked
  // Its process's dispositions: ignored, and caught by a handler.
  CHECK((masks->ignored & (bit(SIGPIPE) | bit(SIGTRAP))) == bit(SIGPIPE));
  CHECK((masks->caught & (bit(SIGPIPE) | bit(SIGTRAP))) == bit(SIGTRAP));
  CHECK(stub::process::ThreadSignalMasks::holds(masks->thread_pending, SIGUSR1));
  CHECK_FALSE(stub::process::ThreadSignalMasks::holds(masks->thread_pending, SIGUSR2));
  CHECK_FALSE(stub::process::ThreadSignalMasks::holds(~uint64_t{0}, 0));

  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(read_thread_signal_masks(child).has_value());
}

TEST_CASE("is_restart_code: ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK alone") {
  using stub::process::in_restarted_system_call;
  using stub::process::is_restart_code;
  const auto rax = [](int64_t v) { return static_cast<uint64_t>(v); };
  for (int64_t code : {-512, -513, -514, -516}) CHECK(is_restart_code(rax(code)));
  for (int64_t other : {-515, -511, -517, -4, 0, 512}) CHECK_FALSE(is_restart_code(rax(other)));
  CHECK(in_restarted_system_call(rax(230), rax(-516)));
  CHECK_FALSE(in_restarted_system_call(rax(-1), rax(-516)));  // outside any system call
}

}  // namespace test_thread_signal_masks
