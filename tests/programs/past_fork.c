/* past_fork.c: values computed right after a vfork and right after a fork
 * (test_past_fork): no system call lies between each call and the point
 * that reads them, so a copy of the program from before the call could
 * only reach the point by making the call again. SIGCHLD is blocked: its
 * delivery after a child's exit would stop the program there (a point a
 * checkpoint is taken at) before either function. `sink` is written three
 * times: in main, then by after_vfork, then by after_fork (the watch); a
 * SIGUSR2 handled before the first (a signal's delivery: a stretch of the
 * history no copy re-runs) must not keep a watch search from the later
 * ones.
 *
 * Prints "vfork 4, fork 3, sink N" and exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sink;
static volatile int handled;

static void on_usr2(int sig) { handled += sig; }

__attribute__((noipa)) void after_vfork(long sum, int forked) { sink = sum + forked; }
__attribute__((noipa)) void after_fork(long sum, int forked) { sink += sum - forked; }

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
  signal(SIGUSR2, on_usr2);
  raise(SIGUSR2);
  sink = 1;
  pid_t vchild = vfork();
  if (vchild == 0) _exit(4);
  after_vfork(work(vchild > 0 ? 8 : 0), vchild > 0);
  pid_t child = fork();
  if (child == 0) _exit(3);
  after_fork(work(child > 0 ? 7 : 0), child > 0);
  int fork_status = 0, vfork_status = 0;
  waitpid(vchild, &vfork_status, 0);
  waitpid(child, &fork_status, 0);
  printf("vfork %d, fork %d, sink %ld\n", WEXITSTATUS(vfork_status), WEXITSTATUS(fork_status), sink);
  return 0;
}
