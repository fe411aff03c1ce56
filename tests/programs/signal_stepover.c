/* signal_stepover.c: a breakpoint in a loop while an ignored signal keeps
 * arriving (tests/integration/test_signal_stepover.py).
 *
 * A 3 ms timer sends SIGWINCH (default action: ignore) while the loop
 * sleeps 2 ms and counts each pass at the line marked "counted": the
 * signal often lands while gdb steps over the breakpoint there, and every
 * pass must still stop at it.
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

volatile int passes;

int main(void) {
  timer_t timer;
  struct sigevent ev = {0};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGWINCH;
  if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) return 2;
  struct itimerspec every = {{0, 3000000}, {0, 3000000}};
  timer_settime(timer, 0, &every, 0);
  for (int k = 0; k < 40; k++) {
    usleep(2000);
    passes++; /* MARK: counted */
  }
  printf("passes=%d\n", passes);
  return 0;
}
