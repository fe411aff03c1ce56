/* watch_stack.c: a stack slot written and read by calls and returns, for
 * test_watch.py: `watch -l` and `rwatch -l` on it must stop where the CPU
 * writes and reads it, also under `btstub --record`, whose tracer takes
 * most calls and returns itself.
 *
 * probe() notes where the calls main makes keep their return address;
 * first() and second() then push theirs there (each a new value), and
 * second's return reads it. Exit code: 0.
 */
#include <stdio.h>

void *volatile slot;
long sink;

__attribute__((noinline)) void probe(void) { slot = (char *)__builtin_frame_address(0) + 8; }
__attribute__((noinline)) void first(long x) { sink += x; }
__attribute__((noinline)) void second(long x) { sink += 2 * x; }

int main(void) {
  probe();
  first(1);
  second(2);
  printf("sink=%ld\n", sink);
  return 0;
}
