/* fault_address.c: a division by zero whose SIGFPE a handler catches.
 *
 * Used by tests/integration/test_fault_address.py. Natively the kernel puts
 * the faulting instruction's address in si_addr, which is also the pc in
 * the handler's ucontext; recorded by the translating tracer the
 * instruction runs from btstub's code cache, and si_addr must still name
 * the program's own instruction. The handler jumps back out (siglongjmp).
 * Prints "rounds N same M" (M of N faults had si_addr equal to the pc) and
 * "done"; without the handler (argument "plain") the SIGFPE kills it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#define ROUNDS 20

volatile int zero = 0;
static sigjmp_buf back;
static int same;

__attribute__((noinline)) int divide(int a) {
  int s = 0;
  for (int i = 0; i < 10; i++) s += a / (i + 1);
  return s + a / zero; /* MARK: divide_by_zero */
}

static void on_fpe(int sig, siginfo_t *info, void *context) {
  (void)sig;
  const ucontext_t *uc = context;
  if ((unsigned long)info->si_addr == (unsigned long)uc->uc_mcontext.gregs[REG_RIP]) same++;
  siglongjmp(back, 1);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "plain") == 0) return divide(100);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fpe;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGFPE, &sa, NULL);
  int rounds = 0;
  for (int i = 0; i < ROUNDS; i++) {
    if (sigsetjmp(back, 1) == 0) divide(100 + i);
    rounds++;
  }
  printf("rounds %d same %d\n", rounds, same);
  printf("done\n");
  return 0;
}
