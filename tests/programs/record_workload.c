/* record_workload.c: a loop-heavy workload for tests/bench/record_bench.py.
 *
 * Between bench_begin() and bench_end() it runs `rounds` (argv[1], default
 * 100) rounds of small loops, calls and a data-dependent branch: about 2,000
 * instructions and a few hundred taken branches per round, deterministic,
 * no system calls. Exit code 0 after printing the checksum.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile unsigned sink;

NOINLINE void bench_begin(void) { sink = 0; }
NOINLINE void bench_end(unsigned v) { sink = v; }

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

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 100;
  unsigned acc = 1;
  bench_begin();
  for (int r = 0; r < rounds; r++) acc = round_work(acc + (unsigned)r);
  bench_end(acc);
  printf("checksum %u\n", acc);
  return 0;
}
