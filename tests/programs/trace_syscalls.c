/* trace_syscalls.c: system calls for the software tracer's fidelity test
 * (tests/tracing): plain syscalls through libc (write, getpid, getppid), a
 * raw `syscall` instruction, and vDSO calls (clock_gettime, gettimeofday,
 * time) that never enter the kernel.
 *
 * The values read differ between runs but the paths taken do not. Exit
 * code: 5.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int main(void) {
  static const char message[] = "trace_syscalls\n";
  write(2, message, sizeof message - 1);
  volatile long pids = getpid() + getppid();
  (void)pids;
  volatile long tid = syscall(SYS_gettid);
  (void)tid;
  struct timespec ts;
  for (int i = 0; i < 3; ++i) clock_gettime(CLOCK_MONOTONIC, &ts);
  struct timeval tv;
  gettimeofday(&tv, 0);
  volatile time_t now = time(0);
  (void)now;
  return 5;
}
