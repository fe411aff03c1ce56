/* client_patch.c: code and data the debugger writes while the program is
 * stopped (test_client_code_write). `value` is written in assembly so that
 * its bytes are the same at every optimisation level: b8 01 00 00 00 c3
 * (mov $1,%eax; ret); the test writes 2 over the immediate at mark, and
 * 5000 into `offset`, and sets eax to 70 at bias_set. The program sums
 * 1,000 calls before mark and 1,000 after and prints the sum plus `offset`
 * plus what bias returned (`bonus`): 8070 when the patched code runs after
 * mark, 7070 when stale code runs.
 */
#include <stdio.h>

int value(void);
__asm__(".text\n.globl value\n.type value, @function\nvalue:\n  mov $1, %eax\n  ret\n.size value, .-value\n");

/* bias: 7 in eax, with a label where the test sets eax to 70 instead. */
int bias(void);
__asm__(".text\n.globl bias\n.globl bias_set\n.type bias, @function\nbias:\n  mov $7, %eax\nbias_set:\n  nop\n  ret\n"
        ".size bias, .-bias\n");

int offset, bonus;

__attribute__((noipa)) void mark(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
  int sum = 0;
  for (int i = 0; i < 1000; i++) sum += value(); /* MARK: before */
  mark();
  bonus = bias();
  for (int i = 0; i < 1000; i++) sum += value(); /* MARK: after */
  printf("sum %d\n", sum + offset + bonus);
  return 0;
}
