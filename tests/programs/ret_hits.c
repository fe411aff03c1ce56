// Threads that all stand at one breakpoint, again and again
// (test_breakpoint_resume.py). Thread k calls hit(k, i) for i = 0..ROUNDS-1
// with nothing else between: whenever one thread stops at the client's
// breakpoint on hit's ret, the others are at or near it too, so stops come
// in together and are kept for later while the first is reported.
//
//   ret_hits [THREADS [ROUNDS]]   (default 4, at most 16; 50)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile long sink[16];

// rdi and rsi still hold k and i at its ret.
__attribute__((noinline)) void hit(long k, long i) { sink[k] += i + 1; }

struct work {
  long k, rounds;
};

static pthread_barrier_t start;

static void* run(void* p) {
  const struct work* w = p;
  pthread_barrier_wait(&start);
  for (long i = 0; i < w->rounds; i++) hit(w->k, i);
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  if (threads < 1 || threads > 16) threads = 4;
  long rounds = argc > 2 ? atol(argv[2]) : 50;
  if (rounds < 1) rounds = 50;
  pthread_t t[16];
  struct work w[16];
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int k = 0; k < threads; k++) {
    w[k] = (struct work){k, rounds};
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
