/* A signal in the middle of a recorded run, for test_signal_replay.py:
 * `watched` is written once before SIGUSR1 is raised (k = 0, 1) and after
 * it (k = 2, 3); the handler counts deliveries, and the exit status is
 * that count, so a signal lost (or one delivered twice) shows in the
 * output and the status. mark() is called twice: a signal sent while the
 * program stands at the first call is delivered there. */
#include <signal.h>
#include <stdio.h>

static volatile int handled;
int watched;

static void on_usr1(int sig) {
  (void)sig;
  handled++;
}

/* Kept out of line and called at -O2 too: each call is a stop. */
__attribute__((noipa)) void mark(void) {}

int main(void) {
  signal(SIGUSR1, on_usr1);
  for (int k = 0; k < 4; k++) {
    watched += k + 1; /* MARK: write */
    if (k == 1) raise(SIGUSR1);
  }
  mark();
  mark();
  printf("watched %d handled %d\n", watched, handled);
  return handled;
}
