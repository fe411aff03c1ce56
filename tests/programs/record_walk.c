/* record_walk.c: a short, deterministic walk for gdb's `record` commands.
 *
 * Used by tests/integration/test_record_btrace.py: a few thousand
 * instructions of loops, calls through a function pointer, recursion and a
 * switch between walk_begin() and walk_end(), recorded with `record btrace`
 * over btstub and with gdb's own `record full` as the reference.
 * Every function is noinline so that -O2 keeps the same breakpoints and
 * frames. Tests find lines by the MARK: comments.
 * Exit code: 0, after printing the checksum.
 */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE void walk_begin(void) {
  sink = 1; /* MARK: begin_body */
}

NOINLINE int square(int v) {
  return v * v; /* MARK: square_body */
}

NOINLINE int twice(int v) {
  return v + v; /* MARK: twice_body */
}

NOINLINE int sum_to(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) { /* MARK: sum_loop */
    s += i + sink;
  }
  return s; /* MARK: sum_return */
}

NOINLINE int depth(int n) {
  if (n <= 0) { /* MARK: depth_entry */
    return sink; /* MARK: depth_base */
  }
  return 1 + depth(n - 1); /* MARK: depth_recurse */
}

NOINLINE int classify(int v) {
  switch (v % 5) { /* MARK: classify_switch */
    case 0: return 11;
    case 1: return 23;
    case 2: return 37;
    case 3: return 41;
    default: return 59;
  }
}

NOINLINE int apply(int (*fn)(int), int v) {
  return fn(v) + sink; /* MARK: apply_body */
}

NOINLINE void walk_end(int total) {
  sink = total; /* MARK: end_body */
}

int main(void) {
  int total = 0;
  walk_begin(); /* MARK: main_begin */
  total += sum_to(40); /* MARK: main_sum */
  total += apply(square, 7); /* MARK: main_apply_square */
  total += apply(twice, 9); /* MARK: main_apply_twice */
  total += depth(6); /* MARK: main_depth */
  for (int k = 0; k < 12; k++) { /* MARK: main_classify_loop */
    total += classify(k + total); /* MARK: main_classify */
  }
  total += sum_to(25); /* MARK: main_sum_again */
  walk_end(total); /* MARK: main_end */
  printf("checksum %d\n", total); /* MARK: main_print */
  return 0; /* MARK: main_return */
}
