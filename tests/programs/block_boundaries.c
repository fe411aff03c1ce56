/* Every kind of block boundary the software tracer meets: conditional
 * branches taken and not taken, jmp, direct and indirect calls, returns, a
 * jump table and loops. test_breakpoints_recording.py puts breakpoints on
 * the targets of all of them (found in the disassembly of the bb_
 * functions) and checks that recording never changes which are hit. */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

__attribute__((noinline)) int bb_leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int bb_fact(int n) { return n > 1 ? n * bb_fact(n - 1) : 1; }

__attribute__((noinline)) int bb_table(int k) {
  switch (k) { /* dense cases: a jump table at -O0 and -O2 */
    case 0: return bb_leaf(k) + 7;
    case 1: sink = 11; return 3;
    case 2: return bb_leaf(k * 5);
    case 3: sink = 13; break;
    case 4: return k - 9;
    case 5: sink = k; return bb_fact(k);
    case 6: return 21;
    default: sink = -1; break;
  }
  return sink;
}

__attribute__((noinline)) int bb_indirect(int (*fn)(int), int x) { return fn(x) + 1; }

__attribute__((noinline)) int bb_loop(int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) {
    if (i & 1) {
      total += i;
    } else {
      total -= bb_leaf(i);
    }
  }
  while (n-- > 0) sink = n;
  return total;
}

static int (*volatile bb_fns[])(int) = {bb_leaf, bb_fact, bb_table};

int main(int argc, char **argv) {
  (void)argv;
  if (argc == 12345) { /* never taken: the jne's target is the next line */
    return 1;
  }
  int total = bb_fact(atoi("5")); /* MARK: jne_target */
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 8; ++k) total += bb_table(k);
    total += bb_indirect(bb_fns[round % 3], round + 2);
    total += bb_loop(5 + round);
    if (total > 1000000) goto out;
  }
out:
  printf("total=%d\n", total);
  return 0;
}
