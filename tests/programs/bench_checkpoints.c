/* Workload of tests/bench/checkpoint_bench.py (not a test program): rounds
 * of arithmetic between bench_begin and bench_end, optionally with a system
 * call after each round, so that the software tracer takes a checkpoint
 * there.
 *
 *   bench_checkpoints_O2 ROUNDS INNER SYSCALLS
 *
 * ROUNDS rounds of INNER iterations of work(); at -O2 an iteration is 5
 * instructions ending in one taken branch. SYSCALLS 1: getppid() after
 * each round; 0: none. rounds_done counts the rounds. */
#include <stdlib.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned long sink;
volatile long rounds_done; /* written once a round: what checkpoint_bench.py watch watches */

__attribute__((noinline)) void bench_begin(void) { __asm__ volatile(""); }
__attribute__((noinline)) void bench_end(void) { __asm__ volatile(""); }

/* The asm keeps the compiler from folding or vectorising the loop. */
__attribute__((noinline)) static unsigned long work(unsigned long x, long n) {
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005UL + (unsigned long)i;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 100;
  long inner = argc > 2 ? atol(argv[2]) : 600;
  int syscalls = argc > 3 ? atoi(argv[3]) : 1;
  unsigned long x = 1;
  bench_begin();
  for (long r = 0; r < rounds; r++) {
    x = work(x, inner);
    rounds_done = r + 1;
    if (syscalls) syscall(SYS_getppid);
  }
  sink = x;
  bench_end();
  printf("%lu\n", x);
  return 0;
}
