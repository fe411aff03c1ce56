/* suspend_pending.c: sigsuspend, ppoll and pselect each let through a
 * SIGUSR1 that was pending (raised while blocked) before the call
 * (test_suspend_pending). The kernel delivers it at once and the call
 * returns -1 (EINTR) after the handler ran; the mask the call replaced
 * comes back then.
 *
 * Prints "sigsuspend -1, ppoll -1, pselect -1, got 30" and exits 0.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

static volatile int got;

static void on_usr1(int sig) { got += sig; }

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t usr1, empty;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigemptyset(&empty);
  sigprocmask(SIG_BLOCK, &usr1, NULL);

  raise(SIGUSR1);
  const int suspended = sigsuspend(&empty);
  raise(SIGUSR1);
  const int polled = ppoll(NULL, 0, NULL, &empty);
  raise(SIGUSR1);
  struct timespec five = {5, 0};
  const int selected = pselect(0, NULL, NULL, NULL, &five, &empty);
  printf("sigsuspend %d, ppoll %d, pselect %d, got %d\n", suspended, polled, selected, got);
  return 0;
}
