/* null_call.c: calls and a tail jump through null and wild function
 * pointers, each a SIGSEGV at the target that a handler recovers from with
 * siglongjmp (gdb.btrace/segv.c calls through a null pointer and dies).
 * Under the translating tracer such a transfer goes through the in-cache
 * table of indirect targets, whose empty entry for index 0 once matched
 * target 0 (tests/integration/test_translate_differential.py).
 * Prints "faults N"; exit code 0 when every call faulted.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*fn)(int);

static sigjmp_buf back;
fn volatile target; /* volatile: the compiler cannot know where it points */

static void on_segv(int sig) {
  (void)sig;
  siglongjmp(back, 1);
}

/* At -O2 a tail jump through the pointer, at -O0 a call. */
__attribute__((noinline)) int through(int x) { return target(x); }

int main(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_segv;
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV, &sa, 0);
  static const uintptr_t wild[] = {0, 1, 0x10000, 0xffff, (uintptr_t)-1, (uintptr_t)-0x10000};
  const int count = (int)(sizeof wild / sizeof wild[0]);
  volatile int faults = 0;
  for (int i = 0; i < count; ++i) {
    target = (fn)wild[i];
    if (sigsetjmp(back, 1) == 0) target(42);
    else ++faults;
    if (sigsetjmp(back, 1) == 0) through(43);
    else ++faults;
  }
  printf("faults %d\n", faults);
  return faults == 2 * count ? 0 : 1;
}
