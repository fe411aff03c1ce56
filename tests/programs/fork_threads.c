/* fork_threads.c: a program with a second thread forks.
 *
 * Used by tests/integration/test_fork_follow.py with detach-on-fork off:
 * the parent has two threads, so btstub reaps its statuses with a wait for
 * any tracee, which also returns the child's; they must reach the child
 * (stub/process/wait_routes.h). The child calls child_work(0..2), the parent
 * parent_work(0..2) while its second thread sleeps.
 * Prints "child 9" and "parent 6, child status 0"; exit 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int child_work(int x) {
  return x * 3; /* MARK: child_work */
}

int parent_work(int x) {
  return x + 1; /* MARK: parent_work */
}

static void *ticker(void *arg) {
  for (int i = 0; i < 20; ++i) usleep(1000);
  return arg;
}

int main(void) {
  pthread_t thread;
  pthread_create(&thread, NULL, ticker, NULL);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int r = 0;
    for (int i = 0; i < 3; ++i) r += child_work(i);
    printf("child %d\n", r);
    fflush(stdout);
    _exit(0);
  }
  int r = 0;
  for (int i = 0; i < 3; ++i) r += parent_work(i);
  pthread_join(thread, NULL);
  int status = 0;
  waitpid(pid, &status, 0);
  printf("parent %d, child status %d\n", r, WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  return 0;
}
