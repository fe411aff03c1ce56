/* non_stop.c: threads for gdb's non-stop mode
 * (tests/integration/test_non_stop.py).
 *
 * A worker thread counts in `ticks` (tick(), about once a millisecond)
 * until `stop_worker` is set. Main waits until it counts, calls
 * main_stop(), starts a short-lived thread and joins it (the thread ends
 * while the client may hold the worker stopped), calls main_joined(),
 * joins the worker, calls main_done() and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

volatile unsigned long ticks;
volatile int stop_worker;
volatile int short_ran;

void tick(void) {
  ticks++; /* MARK: tick */
}

static void *worker(void *arg) {
  (void)arg;
  while (!stop_worker) {
    tick();
    usleep(1000);
  }
  return NULL;
}

static void *short_lived(void *arg) {
  (void)arg;
  short_ran = 1;
  return NULL;
}

void main_stop(void) {
  puts("main stops"); /* MARK: main_stop */
}

void main_joined(void) {
  puts("short-lived thread joined"); /* MARK: main_joined */
}

void main_done(void) {
  puts("worker joined"); /* MARK: main_done */
}

int main(void) {
  pthread_t w, s;
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_create(&w, NULL, worker, NULL);
  while (ticks == 0) usleep(1000);
  main_stop();
  pthread_create(&s, NULL, short_lived, NULL);
  pthread_join(s, NULL);
  main_joined();
  pthread_join(w, NULL);
  main_done();
  return 0;
}
