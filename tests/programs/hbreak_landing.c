/* hbreak_landing.c: hardware breakpoints on instructions a recording
 * tracer reaches by taking a transfer itself, for test_watch.py: the call
 * of g() right after the call of f() (where f's return lands) and the
 * return site of g()'s call (where g's return lands). Under `btstub
 * --record` such a breakpoint never fired: the tracer emulated the return
 * and, in the first case, the call it landed on, so the CPU never ran
 * there; with debug-register trace stops RF, left set from the trace
 * stop, hid the breakpoint at the landing. Exit code: 0.
 */
#include <stdio.h>

volatile int n;

__attribute__((noinline)) void f(void) { n++; }
__attribute__((noinline)) void g(void) { n += 10; }

int main(void) {
  for (int i = 0; i < 5; i++) {
    f();
    g();
  }
  printf("n=%d\n", n);
  return 0;
}
