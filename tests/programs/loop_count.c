/*
 * A hot loop made of the `loop` instruction, which counts rcx down before
 * it branches: where a full trace stops the program at one of its taken
 * branches (test_translate_trace_full), rcx must be what it was before it.
 * Prints the sum, so that a run that counted wrong shows.
 */
#include <stdio.h>
#include <stdlib.h>

static long count_up(long n) {
  long sum = 0;
  if (n <= 0) return 0;
  __asm__ volatile(
      "1:\n\t"
      "add %1, %0\n\t"
      "loop 1b\n"
      : "+r"(sum), "+c"(n)
      :
      : "cc");
  return sum;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  printf("sum %ld\n", count_up(n));
  return 0;
}
