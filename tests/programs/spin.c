/* spin.c: runs for a long time so a debugger can interrupt, attach or detach.
 *
 * Used by tests/integration/test_interrupt.py (Ctrl-C while running),
 * test_attach.py (attach, breakpoint, detach; the program must keep running)
 * and test_signals_and_exit.py (detach: the program finishes on its own).
 *
 *   spin_O0 [SECONDS [MARKER_FILE]]
 *
 * Spins incrementing `counter` until SECONDS (default 60) have passed, or
 * until MARKER_FILE's directory holds a file named "<MARKER_FILE>.stop".
 * Every pass through tick() bumps `ticks`. On the way out it writes
 * "done ticks=N\n" to MARKER_FILE (when given) and exits with code 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long counter = 0;
volatile unsigned long ticks = 0;

void tick(void) {
  ticks++; /* MARK: tick_body */
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 60.0;
  const char *marker = argc > 2 ? argv[2] : NULL;
  char stop_path[4096] = "";
  if (marker != NULL) {
    snprintf(stop_path, sizeof stop_path, "%s.stop", marker);
  }
  double start = now();
  while (now() - start < seconds) {
    for (int i = 0; i < 100000; i++) {
      counter++; /* MARK: spin_inner */
    }
    tick(); /* MARK: spin_tick */
    if (stop_path[0] != '\0' && access(stop_path, F_OK) == 0) {
      break;
    }
    usleep(1000);
  }
  if (marker != NULL) {
    FILE *f = fopen(marker, "w");
    if (f != NULL) {
      fprintf(f, "done ticks=%lu\n", (unsigned long)ticks);
      fclose(f);
    }
  }
  return 0;
}
