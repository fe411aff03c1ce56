/* Single-stepped while it takes SIGSEGVs that its handler recovers from
 * (tests/integration/test_step_ahead.py), as a runtime with guard pages
 * does, with gdb passing SIGSEGV to it. btstub must not run ahead the read
 * that faults, nor let the handler run with the signal mask it blocks
 * signals with while it runs a step ahead. Prints its fault count and the
 * signals it finds blocked at the end (none).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static char *page;
static volatile int faults = 0;

static void on_segv(int sig) {
  (void)sig;
  faults++;
  mprotect(page, 4096, PROT_READ);
}

long poll_loop(long n) {
  long a = 0;
  for (long i = 0; i < n; i++) { /* MARK: poll_loop */
    a += page[i & 7];
    if ((i & 3) == 0) mprotect(page, 4096, PROT_NONE);
  }
  return a;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigaction(SIGSEGV, &sa, NULL);
  page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(page, 4096, PROT_NONE);
  long sum = poll_loop(40);
  sigset_t blocked;
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  int any = 0;
  for (int s = 1; s < 32; s++) any |= sigismember(&blocked, s) ? (1 << s) : 0;
  printf("faults=%d blocked=0x%x sum=%ld\n", faults, any, sum);
  return 0;
}
