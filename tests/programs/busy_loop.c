/* busy_loop.c: computes without a system call in its hot loop, so that under
 * `--record` the thread stands in the translating tracer's code cache almost
 * all the time (test_lifecycle_faults: the client drops while an attached
 * recorded program runs; the detached program must run on to its end).
 *
 *   busy_loop_O0 [SECONDS]
 *
 * Mixes a number for SECONDS (default 3, measured from the start, read
 * through the vDSO every million rounds), then prints "done ROUNDS" and
 * exits with code 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  double start = now();
  unsigned long x = 1, rounds = 0;
  volatile unsigned long sink = 0;
  do {
    for (int i = 0; i < 1000000; i++) {
      x = x * 6364136223846793005UL + 1442695040888963407UL;
      if (x >> 63) sink = sink + 1; /* a branch either way */
      rounds++;
    }
  } while (now() - start < seconds);
  printf("done %lu\n", rounds);
  return sink == 0xffffffffffffffffUL;
}
