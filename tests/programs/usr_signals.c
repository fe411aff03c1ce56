/* Gets SIGUSR1 and SIGUSR2 from tests/integration/test_step_ahead.py while
 * it is being single-stepped, sent from outside between two steps or
 * given by gdb's `signal`. Prints how many of each its handlers saw.
 */
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t usr1 = 0, usr2 = 0;

static void on_usr1(int sig) {
  (void)sig;
  usr1++;
}

static void on_usr2(int sig) {
  (void)sig;
  usr2++;
}

long spin(long n) {
  long a = 0;
  for (long i = 0; i < n; i++) { /* MARK: spin */
    a += i ^ (a >> 1);
  }
  return a;
}

int main(void) {
  signal(SIGUSR1, on_usr1);
  signal(SIGUSR2, on_usr2);
  long sum = spin(3000000);
  printf("usr1=%d usr2=%d\n", (int)usr1, (int)usr2);
  return (int)(sum & 1);
}
