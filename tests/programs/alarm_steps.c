/* Single-stepped while a fast interval timer keeps sending SIGALRM
 * (tests/integration/test_step_ahead.py). btstub blocks asynchronous
 * signals while it runs a step ahead of gdb; the program checks at the end
 * that its signal mask is its own again and that the alarms still came.
 * Exit code 0: both hold; 3: signals left blocked; 4: no alarm arrived.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t alarms = 0;

static void on_alarm(int sig) {
  (void)sig;
  alarms++;
}

long spin(long n) {
  long a = 0;
  for (long i = 0; i < n; i++) { /* MARK: spin */
    a += i ^ (a >> 1);
  }
  return a;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval every = {{0, 5000}, {0, 5000}};
  setitimer(ITIMER_REAL, &every, NULL);
  long sum = 0;
  for (int round = 0; round < 2000 && alarms < 20; round++) sum += spin(20000);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  sigset_t blocked;
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  int any_blocked = 0;
  for (int s = 1; s < 32; s++) any_blocked |= sigismember(&blocked, s);
  printf("alarms=%s blocked=%d sum=%ld\n", alarms > 0 ? "some" : "none", any_blocked, sum & 1);
  return any_blocked ? 3 : (alarms > 0 ? 0 : 4);
}
