/* crash.c: dies by a signal.
 *
 * Used by tests/integration/test_signals_and_exit.py.
 *
 *   crash_O0            -> calls fault_here(), which writes through NULL:
 *                          SIGSEGV inside fault_here.
 *   crash_O0 abort      -> calls abort(): SIGABRT.
 *   crash_O0 exit N     -> exits normally with code N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int *null_pointer = 0;

int prepare(int v) {
  return v * 3; /* MARK: prepare_body */
}

void fault_here(int v) {
  *null_pointer = v; /* MARK: fault_line */
}

int main(int argc, char **argv) {
  int v = prepare(argc); /* MARK: main_prepare */
  if (argc > 1 && strcmp(argv[1], "abort") == 0) {
    abort(); /* MARK: abort_line */
  }
  if (argc > 2 && strcmp(argv[1], "exit") == 0) {
    return atoi(argv[2]);
  }
  fault_here(v); /* MARK: main_fault */
  return 0;
}
