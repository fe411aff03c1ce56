/* shared_wait.c: waits in a loop for a value another process writes into
 * shared memory (test_copy_run_limit). A copy of this program re-run from
 * a checkpoint taken before the write holds the page as it was then and
 * never leaves the loop.
 *
 * A forked child sleeps 0.3 s, writes 42 into an anonymous MAP_SHARED
 * page and waits to be killed; the parent spins until it sees the value,
 * calls arrived(), kills and reaps the child, prints "seen 42, after 84".
 */
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long *shared;
long after;

__attribute__((noipa)) void arrived(long seen) { after = seen * 2; }

int main(void) {
  shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  pid_t child = fork();
  if (child == 0) {
    usleep(300000);
    shared[0] = 42;
    for (;;) pause();
  }
  long seen;
  while ((seen = shared[0]) == 0) {
  }
  arrived(seen);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  printf("seen %ld, after %ld\n", seen, after);
  return 0;
}
