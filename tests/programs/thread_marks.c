// Threads that run into one breakpoint together (test_thread_marks.py).
// Thread k loops 4 * PERIOD + PERIOD / 5 * k times, calling step() each
// time and mark(k, i) at every i % PERIOD == PERIOD - 1: 4 marks for
// k < 5, 5 for the others. They start together, so that their first marks
// come at about the same time, while the others run in translated code.
//
//   thread_marks [THREADS [PERIOD]]   (default 8, at most 16; 100000)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile long sink[16];

__attribute__((noinline)) long step(long k, long i) {
  sink[k] += 3 * i;
  return sink[k];
}

__attribute__((noinline)) void mark(long k, long i) { sink[k] ^= i; }

struct work {
  long k, n, period;
};

static void* run(void* p) {
  const struct work* w = p;
  for (long i = 0; i < w->n; i++) {
    step(w->k, i);
    if (i % w->period == w->period - 1) mark(w->k, i);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 8;
  if (threads < 1 || threads > 16) threads = 8;
  long period = argc > 2 ? atol(argv[2]) : 100000;
  if (period < 5) period = 100000;
  pthread_t t[16];
  struct work w[16];
  for (int k = 0; k < threads; k++) {
    w[k] = (struct work){k, 4 * period + period / 5 * k, period};
    pthread_create(&t[k], NULL, run, &w[k]);
  }
  long sum = 0;
  for (int k = 0; k < threads; k++) {
    pthread_join(t[k], NULL);
    sum += sink[k];
  }
  printf("sum %ld\n", sum);
  return 0;
}
