/* restarted_wait.c: a thread waits in a system call the kernel restarts
 * while the main thread stops at a breakpoint again and again
 * (test_restarted_wait).
 *
 * The waiter sleeps in nanosleep (60 s, writing the time left) from start
 * to end. Every all-stop interrupts that sleep: the call returns a restart
 * code and the kernel makes it again when the thread resumes, moving the
 * pc back onto the `syscall`. The main thread calls tick() ten times,
 * 20 ms apart, then wakes the waiter with SIGUSR1 (a handler without
 * SA_RESTART: the sleep returns EINTR) and joins it. A sleep that returns
 * before the signal is counted in `early`. Prints "early N" and "done".
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t released;
static volatile int waiting;
static long early;

__attribute__((noipa)) void tick(int i) { (void)i; }

/* nanosleep with the `ret` right after the `syscall`, as in the sanitizers'
 * internal_usleep: a tracer that takes the call for done at the restart
 * code runs the thread on by the return (emulated), and the kernel's move
 * back by two bytes then lands inside the caller. */
long raw_nanosleep(const struct timespec* request, struct timespec* left);
__asm__(".text\n"
        ".globl raw_nanosleep\n"
        ".type raw_nanosleep, @function\n"
        "raw_nanosleep:\n"
        "  mov $35, %eax\n" /* SYS_nanosleep */
        "  syscall\n"
        "  ret\n"
        ".size raw_nanosleep, . - raw_nanosleep\n");

static void on_usr1(int sig) { (void)sig; }

static void* waiter(void* arg) {
  (void)arg;
  waiting = 1;
  while (!released) {
    struct timespec ts = {60, 0}, left;
    raw_nanosleep(&ts, &left);
    if (!released) ++early;
  }
  return NULL;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  pthread_t t;
  if (pthread_create(&t, NULL, waiter, NULL) != 0) return 1;
  while (!waiting) usleep(1000);
  usleep(50000);  // in its sleep
  for (int i = 0; i < 10; ++i) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    tick(i);
  }
  released = 1;
  pthread_kill(t, SIGUSR1);
  pthread_join(t, NULL);
  printf("early %ld\n", early);
  printf("done\n");
  return 0;
}
