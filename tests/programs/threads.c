/* threads.c: four threads (main + 3 workers) for all-stop tests.
 *
 * Used by tests/integration/test_threads.py and tests/stub (all-stop).
 * Workers name themselves "worker-N", wait until main has reached
 * all_started() (so every thread exists there), then call work() one after
 * the other in order 1, 2, 3, each behind its own semaphore, so breakpoint
 * hits come in a fixed order and idle threads sit in sem_wait.
 * Exit code: 0, after printing the results.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <unistd.h>

#define NWORKERS 3

static sem_t ready;             /* one post per started worker */
static sem_t go[NWORKERS + 2];   /* go[i]: worker i may call work(); go[N+1]: all done */
int results[NWORKERS + 1];

int work(int id) {
  int v = id * 10; /* MARK: work_body */
  v += 1;          /* MARK: work_add */
  return v;        /* MARK: work_return */
}

void all_started(void) {
  sem_post(&go[1]); /* MARK: all_started_body */
}

/* Each worker sleeps in its own semaphore until its turn, so where every
   thread is at each stop does not depend on timing. */
static void *worker(void *arg) {
  int id = (int)(long)arg;
  char name[16];
  snprintf(name, sizeof name, "worker-%d", id);
  pthread_setname_np(pthread_self(), name);
  sem_post(&ready);
  sem_wait(&go[id]);
  usleep(20000); /* let the thread that woke us get back to its sem_wait */
  results[id] = work(id); /* MARK: worker_call */
  sem_post(&go[id + 1]);
  return NULL;
}

int main(void) {
  pthread_t threads[NWORKERS + 1];
  sem_init(&ready, 0, 0);
  for (int i = 0; i <= NWORKERS + 1; i++) sem_init(&go[i], 0, 0);
  for (int i = 1; i <= NWORKERS; i++) pthread_create(&threads[i], NULL, worker, (void *)(long)i);
  for (int i = 1; i <= NWORKERS; i++) sem_wait(&ready);
  usleep(20000); /* let the last worker reach its sem_wait */
  all_started(); /* MARK: main_all_started */
  sem_wait(&go[NWORKERS + 1]);
  for (int i = 1; i <= NWORKERS; i++) pthread_join(threads[i], NULL);
  printf("results %d %d %d\n", results[1], results[2], results[3]);
  return 0; /* MARK: main_return */
}
