/* shared_writer.c: another process writes memory the program shares with
 * it while the program runs on without a system call, to go back into
 * (tests/integration/test_past_shared_writer.py).
 *
 * A forked child waits until the program raises a flag in an anonymous
 * MAP_SHARED page, then writes 54 there. The program sums that word over
 * kRounds rounds, raising the flag halfway; late() gets the sum 1,000
 * rounds before the end, report() at the end: a re-run of the rounds from
 * a checkpoint taken before them never sees the child's 54 (no re-run
 * repeats another process's write).
 * After the child ended, a second sum of the same word, which nobody
 * writes any more, goes to report_again().
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kRounds = 2000000, kAgain = 1000 };

volatile long *shared; /* [0]: the child's 54; [1]: the flag; [2]: the child may end */
long total, total_again;

__attribute__((noipa)) void late(long sum) { total = sum; }
__attribute__((noipa)) void report(long sum) { total = sum; }
__attribute__((noipa)) void report_again(long sum) { total_again = sum; }

int main(void) {
  shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 2;
  pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    /* Gone with the program, also when a debugger kills it first. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) return 0;
    while (__atomic_load_n(&shared[1], __ATOMIC_ACQUIRE) == 0) usleep(100);
    __atomic_store_n(&shared[0], 54, __ATOMIC_RELEASE);
    /* Its end (a SIGCHLD, a checkpoint) comes after the rounds. */
    while (__atomic_load_n(&shared[2], __ATOMIC_ACQUIRE) == 0) usleep(100);
    return 0;
  }
  usleep(1000); /* a system call: a checkpoint before the rounds */
  long sum = 0;
  for (long i = 0; i < kRounds; i++) {
    if (i == kRounds / 2) __atomic_store_n(&shared[1], 1, __ATOMIC_RELEASE);
    if (i == kRounds - 1000) late(sum);
    sum += __atomic_load_n(&shared[0], __ATOMIC_RELAXED);
  }
  report(sum); /* MARK: report */
  __atomic_store_n(&shared[2], 1, __ATOMIC_RELEASE);
  waitpid(child, NULL, 0);
  long again = 0;
  for (long i = 0; i < kAgain; i++) again += __atomic_load_n(&shared[0], __ATOMIC_RELAXED);
  report_again(again);
  printf("sum=%ld again=%ld\n", total, total_again);
  return 0;
}
