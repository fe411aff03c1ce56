/* signal_flood_stops.c: threads get a signal every 2 ms while another
 * thread stops at a breakpoint every millisecond (test_signal_flood_stops).
 *
 * `worker` counts WORK rounds of a short loop, `clock` reads the time
 * CLOCK_READS times (the vDSO's clock_gettime: a read goes round again when
 * the kernel's time moved on during it). The main thread sends SIGUSR1 to
 * both every 2 ms, and `stopper` calls bp() every millisecond, until both
 * are done. Under a recording, every delivery, every handler's return and every
 * resume after a breakpoint took a checkpoint copy of the program: the next
 * signal arrived while the last was being handled, and the worker never
 * got past the start of its thread. Prints "worker W clock C" and the
 * signals handled.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { WORK = 100, CLOCK_READS = 100 };

static volatile int worker_rounds;
static volatile int clock_reads;
static volatile int handled;

__attribute__((noipa)) void bp(int i) { (void)i; }

static void on_signal(int sig) {
  (void)sig;
  handled++;
}

static void* worker(void* arg) {
  for (int round = 0; round < WORK; round++) {
    for (volatile int k = 0; k < 100; k++) {
    }
    worker_rounds++;
  }
  return arg;
}

static void* clock_reader(void* arg) {
  struct timespec now;
  while (clock_reads < CLOCK_READS) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    clock_reads++;
  }
  return arg;
}

static int done(void) { return worker_rounds == WORK && clock_reads == CLOCK_READS; }

static void* stopper(void* arg) {
  for (int i = 0; !done(); i++) {
    bp(i);
    usleep(1000);
  }
  return arg;
}

int main(void) {
  signal(SIGUSR1, on_signal);
  pthread_t work, clock, stops;
  pthread_create(&work, 0, worker, 0);
  pthread_create(&clock, 0, clock_reader, 0);
  pthread_create(&stops, 0, stopper, 0);
  while (!done()) {
    usleep(2000);
    if (worker_rounds < WORK) pthread_kill(work, SIGUSR1);
    if (clock_reads < CLOCK_READS) pthread_kill(clock, SIGUSR1);
  }
  pthread_join(work, 0);
  pthread_join(clock, 0);
  pthread_join(stops, 0);
  printf("worker %d clock %d (signals handled: %d)\n", worker_rounds, clock_reads, handled);
  return 0;
}
