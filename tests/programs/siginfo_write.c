/* siginfo_write.c: a queued signal whose siginfo gdb changes before it is
 * delivered (tests/integration/test_siginfo_write.py).
 *
 * sigqueue()s SIGUSR1 to itself with the value 7; its SA_SIGINFO handler
 * prints the value and si_code it got, which gdb's
 * `set $_siginfo._sifields._rt.si_sigval.sival_int = 42` at the signal's
 * stop changes.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_usr1(int signo, siginfo_t* info, void* context) {
  (void)signo, (void)context;
  printf("siginfo_write: value %d code %d\n", info->si_value.sival_int, info->si_code);
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &sa, 0);
  union sigval value = {.sival_int = 7};
  sigqueue(getpid(), SIGUSR1, value);
  return 0;
}
