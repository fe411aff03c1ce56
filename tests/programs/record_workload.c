/* record_workload.c: a loop-heavy workload for tests/bench/record_bench.py.
 *
 * Between bench_begin() and bench_end() it runs `rounds` (argv[1], default
 * 100) rounds of small loops, calls and a data-dependent branch: about 2,000
 * instructions and a few hundred taken branches per round, deterministic,
 * no system calls. Exit code 0 after printing the checksum.
 *
 * With "thread" as argv[2] a second thread waits on a mutex through the
 * whole range (btstub then has no copies of the program: the past shows
 * what the history alone determines).
 *
 * With BENCH_TIME in the environment it prints the range's own time, from
 * just before bench_begin() to just after bench_end(), as "bench_range_ns
 * N" on stderr: record_bench.py's native column. The clock is read outside
 * the range, in functions of their own, whether timed or not; the range
 * runs the same instructions timed and untimed (gcc -O2 gave it one
 * instruction fewer than before the clock was added: a register zeroed
 * after bench_begin, taken branches unchanged).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

volatile unsigned sink;

NOINLINE void bench_begin(void) { sink = 0; }
NOINLINE void bench_end(unsigned v) { sink = v; }

static int timing;
static struct timespec range_start;

NOINLINE void clock_start(void) {
  timing = getenv("BENCH_TIME") != NULL;
  if (timing) clock_gettime(CLOCK_MONOTONIC, &range_start);
}

NOINLINE void clock_stop(void) {
  if (!timing) return;
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  fprintf(stderr, "bench_range_ns %lld\n",
          (long long)(end.tv_sec - range_start.tv_sec) * 1000000000LL + (end.tv_nsec - range_start.tv_nsec));
}

NOINLINE unsigned mix(unsigned v) {
  return (v * 2654435761u) ^ (v >> 13);
}

NOINLINE unsigned round_work(unsigned seed) {
  unsigned acc = seed;
  for (int i = 0; i < 64; i++) {
    if ((acc ^ i) & 4) {  /* data-dependent: both outcomes occur */
      acc = mix(acc + i);
    } else {
      acc += (unsigned)i * 3u;
    }
  }
  return acc;
}

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *wait_at_gate(void *arg) {
  pthread_mutex_lock(&gate);
  pthread_mutex_unlock(&gate);
  return arg;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 100;
  int thread = argc > 2 && strcmp(argv[2], "thread") == 0;
  pthread_t waiter;
  if (thread) {
    pthread_mutex_lock(&gate);
    pthread_create(&waiter, 0, wait_at_gate, 0);
  }
  unsigned acc = 1;
  clock_start();
  bench_begin();
  for (int r = 0; r < rounds; r++) acc = round_work(acc + (unsigned)r);
  bench_end(acc);
  clock_stop();
  if (thread) {
    pthread_mutex_unlock(&gate);
    pthread_join(waiter, 0);
  }
  printf("checksum %u\n", acc);
  return 0;
}
