/* A transaction that aborts: on CPUs with TSX turned off (most Intel CPUs
 * since 2019's microcode) every xbegin aborts at once to its fallback; a
 * step over it does too, and some hypervisors then lose the step's trap
 * until the fallback's first instruction has run. test_xbegin_abort.py
 * checks the recorded history shows the fallback's instructions. Where
 * xbegin does not exist (AMD), it raises SIGILL natively and under btstub
 * alike. */
#include <stdio.h>

int tx_test(void);
/* tx_test: 1 when the transaction aborted, 0 when it committed. */
__asm__(".text\n"
        ".globl tx_test\n"
        ".type tx_test, @function\n"
        "tx_test:\n"
        "  xbegin 1f\n"
        "  mov $0, %eax\n"
        "  xend\n"
        "  ret\n"
        "1:\n"
        "  mov $1, %eax\n" /* the fallback's first instruction */
        "  ret\n"
        ".size tx_test, .-tx_test\n");

int main(void) {
  int aborted = tx_test();
  printf("aborted=%d\n", aborted);
  return 0;
}
