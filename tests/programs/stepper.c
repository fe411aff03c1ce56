/* stepper.c: a long run of simple instructions for tests/bench/stepi_bench.py,
 * which single-steps 1,500 instructions from the breakpoint on `step_loop`.
 * The loop runs ~2,000 iterations of a few instructions each, far more than
 * the benchmark steps, so every stepi stays inside plain user code.
 */
volatile long acc = 0;

long step_loop(long n) {
  long a = 0;
  for (long i = 0; i < n; i++) { /* MARK: step_loop */
    a += i ^ (a >> 1);
  }
  return a;
}

int main(void) {
  acc = step_loop(2000);
  return (int)(acc & 1);
}
