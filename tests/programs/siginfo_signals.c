/* Tells what its SA_SIGINFO handlers learn of each SIGUSR1 and SIGUSR2 it
 * gets (tests/integration/test_signal_delivery.py): who sent it (itself,
 * its parent, that is the debug server, or another process), how
 * (si_code) and the value sigqueue gave it.
 *
 *   siginfo_signals          spins, for signals sent from outside
 *   siginfo_signals queue    first sends itself SIGUSR1 with sigqueue (42)
 *   siginfo_signals threads  spins beside a worker thread that waits in
 *                            pause(); the worker's SIGUSR1s are its own
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct seen {
  volatile sig_atomic_t count;
  volatile pid_t pid;
  volatile int code;
  volatile int value;
};

static struct seen usr1, usr2, worker_usr1;
static atomic_int worker_tid;

static void record(struct seen *s, const siginfo_t *info) {
  s->count++;
  s->pid = info->si_pid;
  s->code = info->si_code;
  s->value = info->si_code == SI_QUEUE ? info->si_value.sival_int : -1;
}

static void on_usr1(int sig, siginfo_t *info, void *context) {
  (void)sig, (void)context;
  record(syscall(SYS_gettid) == getpid() ? &usr1 : &worker_usr1, info);
}

static void on_usr2(int sig, siginfo_t *info, void *context) {
  (void)sig, (void)context;
  record(&usr2, info);
}

long spin(long n) {
  long a = 0;
  for (long i = 0; i < n; i++) { /* MARK: spin */
    a += i ^ (a >> 1);
  }
  return a;
}

static void *worker(void *arg) {
  (void)arg;
  atomic_store(&worker_tid, (int)syscall(SYS_gettid));
  for (;;) pause();
  return NULL;
}

/* For gdb to call (`print probe()`). */
int probe(void) {
  return 7;
}

static const char *sender(pid_t pid) {
  if (pid == getpid()) return "self";
  if (pid == getppid()) return "parent";
  if (pid == 0) return "kernel";
  return "other";
}

static const char *code_name(int code) {
  switch (code) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    case SI_KERNEL: return "SI_KERNEL";
    default: return "other";
  }
}

static void report(const char *name, const struct seen *s) {
  if (s->count == 0) {
    printf("%s: none\n", name);
    return;
  }
  printf("%s: count=%d from=%s code=%s value=%d\n", name, (int)s->count, sender(s->pid), code_name(s->code),
         s->value);
}

int main(int argc, char **argv) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_SIGINFO;
  sa.sa_sigaction = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_sigaction = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  if (argc > 1 && strcmp(argv[1], "queue") == 0) {
    union sigval value = {.sival_int = 42};
    sigqueue(getpid(), SIGUSR1, value);
  }
  int threads = argc > 1 && strcmp(argv[1], "threads") == 0;
  if (threads) {
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    /* Until the worker sleeps in pause(): where a signal then stops it
     * is always the same place. */
    while (!atomic_load(&worker_tid)) {
    }
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", atomic_load(&worker_tid));
    while (!strstr(stat, ") S ")) {
      FILE *f = fopen(path, "r");
      if (f == NULL) break;
      if (fgets(stat, sizeof stat, f) == NULL) stat[0] = 0;
      fclose(f);
    }
  }
  long sum = spin(3000000);
  /* The worker's handler may run a little after main's: give it up to 5 s
   * (a signal that never comes reads as none). */
  for (int i = 0; threads && worker_usr1.count == 0 && i < 500; i++) usleep(10000);
  report("usr1", &usr1);
  report("usr2", &usr2);
  if (threads) report("worker usr1", &worker_usr1);
  return (int)(sum & 1);
}
