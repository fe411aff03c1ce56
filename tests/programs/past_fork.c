/* past_fork.c: values computed right after a fork and right after a vfork
 * (test_past_fork): no system call lies between each call and the point
 * that reads them, so a copy of the program from before the call could
 * only reach the point by making the call again. SIGCHLD is blocked: its
 * delivery after a child's exit would stop the program there (a point a
 * checkpoint is taken at) before either function.
 *
 * Prints "fork 3, vfork 4, sink N" and exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sink;

__attribute__((noipa)) void after_fork(long sum, int forked) { sink = sum + forked; }
__attribute__((noipa)) void after_vfork(long sum, int forked) { sink += sum - forked; }

__attribute__((noipa)) long work(long seed) {
  long s = seed;
  for (int i = 0; i < 200; i++) s = s * 31 + i;
  return s;
}

int main(void) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  pid_t child = fork();
  if (child == 0) _exit(3);
  after_fork(work(child > 0 ? 7 : 0), child > 0);
  pid_t vchild = vfork();
  if (vchild == 0) _exit(4);
  after_vfork(work(vchild > 0 ? 8 : 0), vchild > 0);
  int fork_status = 0, vfork_status = 0;
  waitpid(child, &fork_status, 0);
  waitpid(vchild, &vfork_status, 0);
  printf("fork %d, vfork %d, sink %ld\n", WEXITSTATUS(fork_status), WEXITSTATUS(vfork_status), sink);
  return 0;
}
