/* A program under an interval timer faster than a checkpoint copy takes
 * (SIGALRM every 0.5 ms of wall time), for test_signal_replay.py: recorded,
 * each delivery and each handler's return got a copy of its own, the
 * next signal arrived meanwhile, and the program ran nothing but its
 * handler. mark() is called every 400,000 iterations. */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

static volatile int ticks;
static volatile unsigned long sink;

static void on_alarm(int sig) {
  (void)sig;
  ticks++;
}

__attribute__((noipa)) void mark(unsigned long value) { sink += value; }

int main(void) {
  signal(SIGALRM, on_alarm);
  struct itimerval every = {{0, 500}, {0, 500}};
  setitimer(ITIMER_REAL, &every, 0);
  unsigned long acc = 0;
  for (unsigned long i = 0; i < 2000000; i++) {
    acc = acc * 31 + (i ^ (unsigned long)ticks);
    if (i % 400000 == 0) mark(i);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, 0);
  printf("fast timer done: %s\n", ticks > 0 ? "ticked" : "no tick");
  return 0;
}
