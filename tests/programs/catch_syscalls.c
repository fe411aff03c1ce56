/* catch_syscalls.c: known system calls for gdb's `catch syscall`
 * (tests/integration/test_catch_syscall.py): three getppid()s, a write, a
 * getpid(), a child forked and waited for, one vforked and waited for,
 * then the program execs itself ("again": it returns at once).
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sink;

int main(int argc, char** argv) {
  if (argc > 1) return 0;  /* "again", after the exec */
  for (int k = 0; k < 3; k++) sink += getppid();
  write(1, "catch_syscalls: written\n", 24);
  sink += getpid();
  pid_t child = fork();
  if (child == 0) _exit(getppid() == 1);
  int status = 0;
  waitpid(child, &status, 0);
  printf("catch_syscalls: child status %d\n", WEXITSTATUS(status));
  fflush(stdout);
  pid_t vchild = vfork();
  if (vchild == 0) _exit(3);
  waitpid(vchild, &status, 0);
  execl(argv[0], argv[0], "again", (char*)0);
  return 1;
}
