/* exit_streak.c: the leader stops again and again, and one of its threads
 * ends between each two of those stops.
 *
 * Used by tests/stub/test_ptrace_thread_exits.cc. ROUNDS threads start at
 * once and wait on a pipe each; in round i the leader lets thread i go,
 * joins it and executes an int3 (a SIGTRAP stop of the leader). A tracer
 * that waits only after both happened finds the leader's stop first
 * (waitpid(-1) looks at real children before other tracees), so the leader
 * makes a streak of stops while each ended thread waits to be reaped.
 */
#include <pthread.h>
#include <unistd.h>

#define ROUNDS 40

static int gates[ROUNDS][2];

static void *worker(void *arg) {
  char c;
  read(gates[(long)arg][0], &c, 1);
  return NULL;
}

int main(void) {
  pthread_t threads[ROUNDS];
  for (long i = 0; i < ROUNDS; i++) {
    if (pipe(gates[i]) != 0 || pthread_create(&threads[i], NULL, worker, (void *)i) != 0) return 2;
  }
  for (long i = 0; i < ROUNDS; i++) {
    write(gates[i][1], "x", 1);
    pthread_join(threads[i], NULL);
    __asm__ volatile("int3");
  }
  return 0;
}
