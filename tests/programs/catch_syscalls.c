/* catch_syscalls.c: known system calls for gdb's `catch syscall`
 * (tests/integration/test_catch_syscall.py): three getppid()s, a write, a
 * getpid(), a child forked and waited for, then the exit.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sink;

int main(void) {
  for (int k = 0; k < 3; k++) sink += getppid();
  write(1, "catch_syscalls: written\n", 24);
  sink += getpid();
  pid_t child = fork();
  if (child == 0) _exit(getppid() == 1);
  int status = 0;
  waitpid(child, &status, 0);
  printf("catch_syscalls: child status %d\n", WEXITSTATUS(status));
  return 0;
}
