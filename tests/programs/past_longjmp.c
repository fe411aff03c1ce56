/* past_longjmp.c: call chains for tests/integration/test_past_longjmp.py to
 * walk in the recorded past (bt with arguments, frames, locals, finish
 * values, compared with gdb's record full).
 *
 * Single-threaded, no input: every value is the same in every run.
 *
 * Part a: main -> chain1 -> chain2 -> chain3 -> chain4 -> chain_leaf, each
 * with arguments and locals. The test starts recording at MARK
 * deep_start, five frames down, so the frames older than chain_leaf were
 * entered before the history begins; the program then returns through
 * them and calls fresh ones (after_chain, after_leaf) up to MARK a_end.
 *
 * Part b: jump_outer takes a setjmp, then jump1 -> jump2 -> jump3 ->
 * jump_leaf, which longjmps back out of all four (MARK jumped is where
 * setjmp returns the second time); sig_outer does the same through a
 * signal handler: sig1 -> sig_leaf raises SIGUSR1, whose handler
 * siglongjmps out of the handler and both frames (MARK sig_jumped).
 *
 * noipa keeps every function a real call at -O2 too, so each has a frame
 * to show in bt and to step into or finish from; volatile keeps the
 * locals that live across setjmp.
 */
#include <setjmp.h>
#include <signal.h>

long g_trace;    /* every function adds to it */
jmp_buf g_env;
sigjmp_buf g_sig_env;

__attribute__((noipa)) long chain_leaf(long a, int b, const char *tag) {
  long product = a * b + tag[0];
  g_trace += product; /* MARK: deep_start */
  return product + g_trace;
}

__attribute__((noipa)) long chain4(long a, int b) {
  long got = chain_leaf(a + 4, b * 2, "four");
  g_trace += got;
  return got - 1;
}

__attribute__((noipa)) long chain3(long a, int b) {
  int twice = b * 2;
  long got = chain4(a * 3, twice);
  g_trace ^= got;
  return got + twice;
}

__attribute__((noipa)) long chain2(long a, int b) {
  long got = chain3(a + 2, b + 1);
  return got * 2;
}

__attribute__((noipa)) long chain1(long a) {
  long got = chain2(a, 5);
  g_trace += got; /* MARK: chain1_back */
  return got + 1;
}

__attribute__((noipa)) long after_leaf(long x, int y) {
  long z = x * y;
  g_trace += z; /* MARK: after_leaf */
  return z;
}

__attribute__((noipa)) long after_chain(long x) {
  long first = after_leaf(x, 3);
  long second = after_leaf(first, 7);
  return first + second;
}

__attribute__((noipa)) void jump_leaf(long depth, int code) {
  long doubled = depth * 2;
  g_trace += doubled + code; /* MARK: jump_leaf */
  longjmp(g_env, code);
}

__attribute__((noipa)) void jump3(long depth, int code) {
  long local3 = depth + 30;
  g_trace += local3;
  jump_leaf(depth + 1, code + 1);
  g_trace = -1; /* never */
}

__attribute__((noipa)) void jump2(long depth, int code) {
  long local2 = depth + 20;
  g_trace += local2;
  jump3(depth + 1, code + 1);
  g_trace = -2; /* never */
}

__attribute__((noipa)) void jump1(long depth, int code) {
  jump2(depth + 1, code + 1);
  g_trace = -3; /* never */
}

__attribute__((noipa)) long jump_outer(long start) {
  volatile long before = g_trace;
  int code = setjmp(g_env);
  if (code != 0) {
    g_trace += code; /* MARK: jumped */
    return g_trace - before;
  }
  jump1(start, 1);
  return -1; /* never */
}

void on_usr1(int sig) {
  g_trace += sig; /* MARK: handler */
  siglongjmp(g_sig_env, sig);
}

__attribute__((noipa)) void sig_leaf(long depth) {
  long here = depth * 5;
  g_trace += here;
  raise(SIGUSR1); /* MARK: raise */
  g_trace = -4; /* never */
}

__attribute__((noipa)) void sig1(long depth) {
  sig_leaf(depth + 1);
  g_trace = -5; /* never */
}

__attribute__((noipa)) long sig_outer(long start) {
  volatile long before = g_trace;
  signal(SIGUSR1, on_usr1);
  int got = sigsetjmp(g_sig_env, 1);
  if (got != 0) {
    g_trace += got; /* MARK: sig_jumped */
    return g_trace - before;
  }
  sig1(start);
  return -1; /* never */
}

__attribute__((noipa)) int done(long total) {
  return (int)(total & 1); /* MARK: a_end */
}

int main(void) {
  long total = chain1(7);
  total += after_chain(total & 0xff);
  total += jump_outer(100);
  total += sig_outer(200);
  return done(total) + 0 * (int)total;
}
