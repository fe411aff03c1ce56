/* dies_while_detaching.c: a fork child that ends its whole program while
 * the debugger lets its threads go one by one.
 *
 * Used by tests/integration/test_dies_while_detaching.py. main forks; the
 * child starts kThreads threads that wait (they never end by themselves),
 * calls child_ready() once all have started, then _exit(0): exit_group,
 * which kills every thread of the child, also those a debugger has not
 * let go yet. The parent waits for the child and prints how it ended
 * ("child exited, status=N" or "child signaled, sig=N"); an alarm ends a
 * parent whose wait never returns.
 * Exit code 0; 1 when waitpid fails.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kThreads = 64 };

static pthread_barrier_t all_started;

static void *waiter(void *arg) {
  (void)arg;
  pthread_barrier_wait(&all_started);
  for (;;) pause();
  return NULL;
}

/* A breakpoint here stops the child with every thread started. */
void __attribute__((noinline)) child_ready(void) { __asm__ volatile("" ::: "memory"); }

static void run_child(void) {
  pthread_t threads[kThreads];
  pthread_barrier_init(&all_started, NULL, kThreads + 1);
  for (int i = 0; i < kThreads; i++) pthread_create(&threads[i], NULL, waiter, NULL);
  pthread_barrier_wait(&all_started);
  child_ready();
  _exit(0);
}

int main(void) {
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) run_child();
  alarm(20);
  int status = 0;
  if (waitpid(child, &status, 0) != child) {
    perror("waitpid");
    return 1;
  }
  if (WIFEXITED(status)) {
    printf("child exited, status=%d\n", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    printf("child signaled, sig=%d\n", WTERMSIG(status));
  }
  return 0;
}
