/* execer.c: a program that execs itself.
 *
 * Used by tests/integration/test_fork_exec.py. Started without arguments it
 * calls before_exec() and execs /proc/self/exe with the argument "second";
 * the second image calls after_exec(2) and exits with 0.
 * Prints "first" then "second"; exit code 0 (1 if the exec failed).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int before_exec(int n) {
  return n + 1; /* MARK: before_exec */
}

int after_exec(int n) {
  return n * 2; /* MARK: after_exec */
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "second") == 0) {
    printf("second %d\n", after_exec(2));
    return 0;
  }
  printf("first %d\n", before_exec(1));
  fflush(stdout);
  execl("/proc/self/exe", argv[0], "second", (char *)NULL);
  perror("execl");
  return 1;
}
