// A program that takes SIGTRAP itself (test_sigtrap_handler.py):
//   1. a handler (without SA_NODEFER, so SIGTRAP is blocked while it
//      runs) for three raise(SIGTRAP)s, each handler call some branches long;
//   2. SIGTRAP blocked by sigprocmask over a loop, then unblocked and
//      raised (the handler runs);
//   3. SIGTRAP ignored, three raised (nothing happens).
// A tracer's trap (a step, an int3) while SIGTRAP is blocked or ignored
// reaches the kernel as a forced SIGTRAP, which unblocks it and resets
// its disposition to SIG_DFL: the next raise would kill the program.
// Natively it prints "handled N: N", "blocked: mask blocks trap 1",
// "unblocked: hits 4", "ignored N", "disposition ignore" and
// "mask blocks trap 0".
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile int hits;
static volatile unsigned sink;

static unsigned __attribute__((noipa)) churn(unsigned x) {
  for (int i = 0; i < 20; ++i) x = x * 2654435761u + (x >> 7) + (unsigned)i;
  return x;
}

static void on_trap(int sig) {
  (void)sig;
  ++hits;
  for (int i = 0; i < 5; ++i) sink = churn(sink + (unsigned)i);
}

static int trap_blocked(void) {
  sigset_t now;
  sigprocmask(SIG_BLOCK, NULL, &now);
  return sigismember(&now, SIGTRAP);
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_trap;
  if (sigaction(SIGTRAP, &sa, NULL) != 0) return 100;
  for (int i = 1; i <= 3; ++i) {
    raise(SIGTRAP);
    printf("handled %d: %d\n", i, hits);
  }
  sigset_t trap;
  sigemptyset(&trap);
  sigaddset(&trap, SIGTRAP);
  sigprocmask(SIG_BLOCK, &trap, NULL);
  for (int i = 0; i < 5; ++i) sink = churn(sink + (unsigned)i);
  printf("blocked: mask blocks trap %d\n", trap_blocked());
  sigprocmask(SIG_UNBLOCK, &trap, NULL);
  raise(SIGTRAP);
  printf("unblocked: hits %d\n", hits);
  signal(SIGTRAP, SIG_IGN);
  for (int i = 1; i <= 3; ++i) {
    raise(SIGTRAP);
    sink = churn(sink);
    printf("ignored %d\n", i);  // MARK: ignored_print
  }
  struct sigaction now;
  sigaction(SIGTRAP, NULL, &now);
  printf("disposition %s\n", now.sa_handler == SIG_IGN ? "ignore" : now.sa_handler == SIG_DFL ? "default" : "handler");
  printf("mask blocks trap %d\n", trap_blocked());
  return 0;
}
