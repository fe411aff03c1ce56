/* forker.c: fork and vfork.
 *
 * Used by tests/integration/test_fork_exec.py and test_fork_follow.py. shared_work() is called by
 * the fork child first, then by the parent once the child is gone, so a
 * breakpoint there shows which process gdb follows; a child that kept the
 * parent's int3s would die of SIGTRAP (status shows it). Then a vfork child
 * that only exits with 5.
 * Prints "child N", "fork status S", "parent N", "vfork status S"; exit 0.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int shared_work(int x) {
  int v = x * 3; /* MARK: shared_work */
  return v;
}

static int describe(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 100 + WTERMSIG(status);
  return -1;
}

int main(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    /* Let the parent reach waitpid first: with both processes debugged
     * (detach-on-fork off) its stack then shows it waiting, whatever the
     * scheduler does. */
    usleep(100 * 1000);
    int r = shared_work(5); /* MARK: child_call */
    printf("child %d\n", r);
    fflush(stdout);
    _exit(r == 15 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0); /* MARK: parent_wait */
  printf("fork status %d\n", describe(status));
  printf("parent %d\n", shared_work(7)); /* MARK: parent_call */
  fflush(stdout);

  pid = vfork();
  if (pid == 0) _exit(5);
  waitpid(pid, &status, 0);
  printf("vfork status %d\n", describe(status)); /* MARK: after_vfork */
  return 0;
}
