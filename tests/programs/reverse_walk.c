/* reverse_walk.c: a small program to walk backwards through.
 *
 * Used by tests/integration/test_reverse_*.py and .ci/demo: record from
 * MARK main_start to MARK main_print (few instructions, no library calls in
 * between), then reverse-stepi/-step/-next/-finish/-continue through calls,
 * a loop and a recursion. Tests find lines by the MARK: comments.
 *
 * noipa keeps every function a real call at -O2 too (no inlining, cloning
 * or interprocedural shortcuts), so frames exist to step into and out of.
 */
#include <stdio.h>

int total;
volatile int input = 3;

__attribute__((noipa)) int square(int v) {
  return v * v; /* MARK: square_body */
}

__attribute__((noipa)) int sum_squares(int n) {
  int sum = 0; /* MARK: sum_entry */
  for (int i = 1; i <= n; i++) {
    sum += square(i); /* MARK: sum_loop */
  }
  return sum; /* MARK: sum_return */
}

__attribute__((noipa)) int depth(int n) {
  if (n <= 0) return 0; /* MARK: depth_base */
  return 1 + depth(n - 1); /* MARK: depth_recurse */
}

__attribute__((noipa)) void report(int value) {
  total += value; /* MARK: report_body */
}

int main(void) {
  int a, b;
  total = 0; /* MARK: main_start */
  a = sum_squares(input); /* MARK: main_sum */
  b = depth(input); /* MARK: main_depth */
  report(a + b); /* MARK: main_report */
  printf("total %d\n", total); /* MARK: main_print */
  return total == 17 ? 0 : 1;
}
