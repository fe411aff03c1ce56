/* trace_signals.c: signals for the software tracer's fidelity test
 * (tests/tracing): raise() with a handler (the handler's entry is a branch
 * from the interrupted pc; rt_sigreturn one back), a SIGILL from ud2 whose
 * handler moves the interrupted pc past the faulting instruction, and a
 * signal blocked then released by sigprocmask (delivered at syscall exit).
 *
 * Deterministic: no timers. Exit code: 3 when every handler ran as expected.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <ucontext.h>

static volatile int usr1_count;
static volatile int ill_count;

static void on_usr1(int sig) {
  (void)sig;
  usr1_count++;
}

static void on_ill(int sig, siginfo_t *info, void *context) {
  (void)sig;
  (void)info;
  ucontext_t *uc = context;
  uc->uc_mcontext.gregs[REG_RIP] += 2; /* skip the ud2 */
  ill_count++;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, 0);
  sa.sa_sigaction = on_ill;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGILL, &sa, 0);

  raise(SIGUSR1);
  raise(SIGUSR1);
  __asm__ volatile("ud2");

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, 0);
  raise(SIGUSR1); /* pending until unblocked */
  sigprocmask(SIG_UNBLOCK, &set, 0);

  return usr1_count == 3 && ill_count == 1 ? 3 : 1;
}
