/* gdb's `signal SIG` resumes a thread with a signal; whether the kernel
 * delivers it depends on the kind of stop the thread is in
 * (tests/integration/test_signal_at_stop.py): after a step into a signal
 * handler (a ptrace_notify stop) it is ignored, after a breakpoint or an
 * ordinary step it is delivered.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile int usr1, usr2, work; /* main writes only `work` */

static void on_usr1(int sig) {
  (void)sig;
  usr1++;
}

static void on_usr2(int sig) {
  (void)sig;
  usr2++;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  work++; /* MARK: into_handler */
  work++; /* MARK: at_step */
  printf("usr1=%d usr2=%d\n", usr1, usr2); /* MARK: report */
  return 0;
}
