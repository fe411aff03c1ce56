/* trace_control.c: control flow for the software tracer's fidelity test
 * (tests/tracing): loops, recursion, calls through function pointers, a
 * switch dense enough for a jump table, setjmp/longjmp, and first calls into
 * libc through lazily bound PLT entries (built with -z lazy).
 *
 * Deterministic on purpose: the reference and the traced run must execute
 * the same instructions. Exit code: the checksum modulo 256.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf escape;

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int add(int a, int b) { return a + b; }
static int sub(int a, int b) { return a - b; }
static int mul(int a, int b) { return a * b; }

static int classify(int x) {
  switch (x % 8) { /* dense cases: a jump table at -O0 and -O2 */
    case 0: return 11;
    case 1: return 23;
    case 2: return 37;
    case 3: return 41;
    case 4: return 53;
    case 5: return 67;
    case 6: return 79;
    default: return 97;
  }
}

static void deep(int depth) {
  if (depth < 0) return;
  if (depth == 0) longjmp(escape, 42);
  deep(depth - 1);
}

int main(int argc, char **argv) {
  (void)argv;
  volatile int sum = 0;
  int (*ops[])(int, int) = {add, sub, mul};
  for (int i = 0; i < 30; ++i) sum = ops[i % 3](sum, i) & 0xffff;
  for (int i = 0; i < 20; ++i) sum += classify(i + argc);
  sum += fib(12);
  int jumped = setjmp(escape);
  if (jumped == 0) {
    deep(5);
  } else {
    sum += jumped;
  }
  char buffer[64];
  snprintf(buffer, sizeof buffer, "sum=%d", sum); /* lazily bound PLT call */
  sum += (int)strlen(buffer);
  char *copy = malloc(16);
  memcpy(copy, buffer, 8);
  sum += copy[0];
  free(copy);
  return sum & 0xff;
}
