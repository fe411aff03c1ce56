/* signal_after_syscall.c: a signal that stops the thread at a breakpoint
 * it has not hit yet (tests/integration/test_signal_stepover.py).
 *
 * Each pass sends itself SIGWINCH (default action: ignore) by a tgkill
 * whose `syscall` instruction is followed by the label after_kill: the
 * signal is taken as the system call returns, so the thread's signal stop
 * is at after_kill, before the instruction there runs. With a breakpoint
 * on after_kill, every pass must stop at it once the signal is passed on.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

volatile int passes;

__attribute__((noinline)) static long kill_self(long pid, long tid) {
  long ret;
  __asm__ volatile(
      "syscall\n"
      ".globl after_kill\n"
      "after_kill:\n"
      : "=a"(ret)
      : "a"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"((long)SIGWINCH)
      : "rcx", "r11", "memory");
  return ret;
}

int main(void) {
  const long pid = getpid();
  const long tid = syscall(SYS_gettid);
  for (int k = 0; k < 8; k++) {
    if (kill_self(pid, tid) != 0) return 2;
    passes++;
  }
  printf("passes=%d\n", passes);
  return 0;
}
