/* Signals in the recorded past (tests/integration/test_past_signals.py):
 * two handled signals raised by the program itself, one sent by kill(),
 * one ignored (SIG_IGN: delivered, no handler runs) and one blocked and
 * then unblocked, between stretches of work. Replay must stop where each
 * was delivered, going back and forth, as gdb's record full does.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t seen;

static void on_usr1(int sig) {
  (void)sig;
  seen += 1; /* MARK: on_usr1 */
}

static void on_usr2(int sig) {
  (void)sig;
  seen += 10;
}

static int work(int n) {
  int a = 0;
  for (int i = 0; i < n; i++) a += i * (int)seen;
  return a;
}

int main(void) {
  signal(SIGUSR1, on_usr1);
  signal(SIGUSR2, on_usr2);
  signal(SIGWINCH, SIG_IGN);
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  int total = work(10); /* MARK: start */
  raise(SIGUSR1);
  total += work(20);
  raise(SIGWINCH);
  total += work(30);
  kill(getpid(), SIGUSR2);
  sigprocmask(SIG_BLOCK, &usr2, NULL);
  raise(SIGUSR2);
  total += work(40);
  sigprocmask(SIG_UNBLOCK, &usr2, NULL);
  total += work(50);
  printf("total=%d seen=%d\n", total, (int)seen); /* MARK: done */
  return 0;
}
