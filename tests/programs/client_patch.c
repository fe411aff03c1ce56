/* client_patch.c: code the debugger patches while the program is stopped
 * (test_client_code_write). `value` is written in assembly so that its
 * bytes are the same at every optimisation level: b8 01 00 00 00 c3
 * (mov $1,%eax; ret); the test writes 2 over the immediate at mark. The
 * program sums 1,000 calls before mark and 1,000 after: 3000 when the
 * patched code runs after mark, 2000 when stale code runs.
 */
#include <stdio.h>

int value(void);
__asm__(".text\n.globl value\n.type value, @function\nvalue:\n  mov $1, %eax\n  ret\n.size value, .-value\n");

__attribute__((noipa)) void mark(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
  int sum = 0;
  for (int i = 0; i < 1000; i++) sum += value();
  mark();
  for (int i = 0; i < 1000; i++) sum += value();
  printf("sum %d\n", sum);
  return 0;
}
