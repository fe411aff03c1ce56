/* signals_mt.c: signals in a multi-threaded program.
 *
 * Used by tests/integration/test_thread_signals.py. Three workers idle in
 * short sleeps. Main sends SIGUSR1 to each worker in turn, 30 times, waiting
 * for every one to be handled (so the count is exact), then calls stepper()
 * while (with the argument "noisy") worker 1 keeps sending itself SIGUSR1
 * (signals arrive while main is being single-stepped), then queues SIGUSR2 with value 1234 to worker 2
 * ($_siginfo), then reaches before_sigint(), where a test delivers SIGINT
 * with gdb's `signal SIGINT`.
 * Prints "usr1 30", "usr2 1234", "sigint N"; exit code 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NWORKERS 3

static atomic_int usr1_count;
static atomic_int usr2_value;
static atomic_int noisy;     /* worker 1 sends itself SIGUSR1 while set */
static atomic_int finished;  /* workers return when set */
static volatile sig_atomic_t sigint_count;

static void on_usr1(int sig) { (void)sig; atomic_fetch_add(&usr1_count, 1); }
static void on_usr2(int sig, siginfo_t *info, void *ctx) {
  (void)sig, (void)ctx;
  atomic_store(&usr2_value, info->si_value.sival_int);
}
static void on_int(int sig) { (void)sig; sigint_count++; }

static void *worker(void *arg) {
  int id = (int)(long)arg;
  while (!atomic_load(&finished)) {
    if (id == 1 && atomic_load(&noisy)) pthread_kill(pthread_self(), SIGUSR1);
    usleep(200);
  }
  return NULL;
}

int stepper(int n) {
  int v = n;  /* MARK: stepper_first */
  v += 1;     /* MARK: stepper_second */
  usleep(20000);  /* MARK: stepper_sleep */
  v *= 2;     /* MARK: stepper_third */
  usleep(20000);
  v -= 3;     /* MARK: stepper_fourth */
  return v;   /* MARK: stepper_return */
}

void before_sigint(void) {
  sigint_count += 0; /* MARK: before_sigint */
}

static void install(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv) {
  int noise = argc > 1 && strcmp(argv[1], "noisy") == 0;
  install(SIGUSR1, on_usr1);
  install(SIGINT, on_int);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr2;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR2, &sa, NULL);

  pthread_t threads[NWORKERS + 1];
  for (long i = 1; i <= NWORKERS; i++) pthread_create(&threads[i], NULL, worker, (void *)i);

  for (int round = 0; round < 10; round++) {
    for (int i = 1; i <= NWORKERS; i++) {
      int before = atomic_load(&usr1_count);
      pthread_kill(threads[i], SIGUSR1);
      while (atomic_load(&usr1_count) == before) usleep(100);
    }
  }
  printf("usr1 %d\n", atomic_load(&usr1_count)); /* MARK: after_pelt */
  fflush(stdout);

  if (noise) {
    atomic_store(&noisy, 1);
    while (atomic_load(&usr1_count) < 40) usleep(100);  /* the noise has started */
  }
  int r = stepper(5); /* MARK: call_stepper */
  atomic_store(&noisy, 0);
  printf("stepper %d\n", r);

  union sigval value;
  value.sival_int = 1234;
  pthread_sigqueue(threads[2], SIGUSR2, value);
  while (atomic_load(&usr2_value) == 0) usleep(100);
  printf("usr2 %d\n", atomic_load(&usr2_value));

  before_sigint();
  printf("sigint %d\n", (int)sigint_count);

  atomic_store(&finished, 1);
  for (int i = 1; i <= NWORKERS; i++) pthread_join(threads[i], NULL);
  return 0; /* MARK: main_return */
}
