/* Exits from a nested call with a status the test checks: the end of a
 * recorded program, where btstub (like gdb's record full) stops before
 * exit_group so the history can be walked back from there. */
#include <stdlib.h>

int steps;

__attribute__((noinline)) void finish_up(int code) {
  steps += code;
  exit(code); /* MARK: exit_call */
}

int main(void) {
  for (int i = 0; i < 3; ++i) steps += i;
  finish_up(5);
}
