/* Copies of the program re-run into hot code (test_past_hot_loop.py):
 * fill() runs a `rep stosb` (the label rep_insn) 402 times with 0-4
 * iterations, the last time 1; then spin() runs a one-block loop 6,000
 * times (more visits of one pc than a checkpoint stretch has branches).
 * Both write a, b, c and d, each in its own debug register when watched,
 * every so often and always to a new value. */
#include <stdio.h>

volatile long a, b, c, d;
char buf[64];

__attribute__((noinline, noclone)) void fill(char *p, long n) {
  __asm__ volatile(".globl rep_insn\nrep_insn:\n\trep stosb" : "+D"(p), "+c"(n) : "a"(0x5a) : "memory");
}

__attribute__((noinline, noclone)) unsigned long spin(unsigned long x, long n) {
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005UL + (unsigned long)i;
    if ((i & 1023) == 1000) c += (long)(x | 1); /* MARK: spin_write */
  }
  return x;
}

int main(void) {
  for (long k = 0; k < 402; k++) {
    fill(buf, k % 5);
    if (k % 100 == 50) b += k + 1; /* MARK: fill_write */
  }
  a = 1;
  unsigned long x = spin(7, 6000);
  d = (long)x;
  printf("x %lu b %ld c %ld\n", x, b, c); /* MARK: done */
  return 0;
}
