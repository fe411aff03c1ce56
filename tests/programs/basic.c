/* basic.c: the everyday debugging target.
 *
 * Used by tests/integration/test_basic_commands.py, test_stdio_mode.py and
 * test_side_by_side.py (break/tbreak/step/next/finish/until/advance/bt/print/
 * set var/info registers/x/disassemble/exit code), and by test_cli.py as a
 * program to launch.
 *
 * Tests find lines by the MARK: comments, never by hard-coded numbers, so
 * edits here do not break them; keep each marker unique.
 *
 * Exit code: 7 when argv[1] is "alpha" and argv[2] is "beta", otherwise
 * 10 + argc, so a test sees whether its arguments arrived.
 */
#include <stdio.h>
#include <string.h>

struct point {
  int x;
  int y;
  const char *name;
};

int counter = 5;
const char greeting[] = "hello, btstub";
struct point origin = {3, -4, "origin"};
int squares[4] = {0, 1, 4, 9};
double scale = 2.5;

int compute(int n) {
  int sum = 0; /* MARK: compute_entry */
  int i;
  for (i = 0; i < n; i++) { /* MARK: compute_for */
    sum += i * 2; /* MARK: compute_loop */
  }
  counter += 1;
  return sum + counter; /* MARK: compute_return */
}

int factorial(int n) {
  if (n <= 1) { /* MARK: factorial_entry */
    return 1; /* MARK: factorial_base */
  }
  return n * factorial(n - 1);
}

int add_one(int v) {
  return v + 1; /* MARK: add_one_body */
}

double sse_work(double a) {
  volatile double r = a * scale + 0.25; /* MARK: sse_compute */
  return r; /* MARK: sse_return */
}

int main(int argc, char **argv) {
  int result = 0;
  int args_ok = argc == 3 && strcmp(argv[1], "alpha") == 0 &&
                strcmp(argv[2], "beta") == 0; /* MARK: main_args */
  result = compute(4); /* MARK: main_compute */
  result += factorial(5); /* MARK: main_factorial */
  result = add_one(result); /* MARK: main_add_one_1 */
  result = add_one(result); /* MARK: main_add_one_2 */
  result = add_one(result); /* MARK: main_add_one_3 */
  double d = sse_work(4.0); /* MARK: main_sse */
  printf("result=%d d=%g greeting=%s\n", result, d, greeting); /* MARK: main_print */
  fflush(stdout);
  return args_ok ? 7 : 10 + argc; /* MARK: main_return */
}
