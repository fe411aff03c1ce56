/* attach_threads.c: a multi-threaded program that waits to be attached to.
 *
 * Used by tests/integration/test_attach_threads.py (btstub --attach).
 *
 *   attach_threads_O0 MARKER_FILE
 *
 * Main starts three workers, named "worker-1".."worker-3", and waits in
 * main_wait() until a file named "<MARKER_FILE>.stop" exists. Each worker
 * calls worker_tick() every millisecond until then. When told to stop, main
 * joins the workers and writes "done ticks=A B C\n" (each worker's number of
 * worker_tick() calls) to MARKER_FILE, then exits with code 0. A leftover
 * int3 in worker_tick() after a detach would kill it with SIGTRAP instead.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define NWORKERS 3

static atomic_int finished;
volatile unsigned long ticks[NWORKERS + 1];

void worker_tick(int id) {
  ticks[id]++; /* MARK: worker_tick_body */
}

static void *worker(void *arg) {
  int id = (int)(long)arg;
  char name[16];
  snprintf(name, sizeof name, "worker-%d", id);
  pthread_setname_np(pthread_self(), name);
  while (!atomic_load(&finished)) {
    worker_tick(id);
    usleep(1000);
  }
  return NULL;
}

void main_wait(const char *stop_path) {
  while (access(stop_path, F_OK) != 0) usleep(2000); /* MARK: main_wait_loop */
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  char stop_path[4096];
  snprintf(stop_path, sizeof stop_path, "%s.stop", argv[1]);
  pthread_t threads[NWORKERS + 1];
  for (long i = 1; i <= NWORKERS; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
  main_wait(stop_path);
  atomic_store(&finished, 1);
  for (int i = 1; i <= NWORKERS; i++) pthread_join(threads[i], NULL);
  FILE *f = fopen(argv[1], "w");
  if (f == NULL) return 1;
  fprintf(f, "done ticks=%lu %lu %lu\n", ticks[1], ticks[2], ticks[3]);
  fclose(f);
  return 0;
}
