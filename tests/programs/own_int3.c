/* own_int3.c: a program with an int3 of its own in its code, which stops
 * it with SIGTRAP under a debugger (tests/integration/
 * test_memory_breakpoints.py): a breakpoint's int3 written by the client is
 * reported as a breakpoint, this one as the program's signal.
 */
#include <stdio.h>

__attribute__((noipa)) int after_trap(int v) {
  return v * 3; /* MARK: after_trap_body */
}

__attribute__((noipa)) int trap_here(int v) {
  __asm__ volatile("int3"); /* MARK: own_int3 */
  return after_trap(v + 1);
}

int main(void) {
  int r = trap_here(4);
  r += trap_here(r);
  printf("r=%d\n", r);
  return 0;
}
