/* past_join.c: for tests/integration/test_past_join.py. A second thread
 * runs and is joined, then the program works alone: values in the
 * recorded past after the join (where btstub can take checkpoints again)
 * are compared with gdb's record full, started at MARK joined.
 *
 * No input: every value is the same in every run. noipa keeps every
 * function a real call at -O2 too.
 */
#include <pthread.h>

long g_worker;          /* the second thread's result */
unsigned long g_acc;    /* the work after the join */
long g_rounds;

__attribute__((noipa)) void *worker(void *arg) {
  long n = (long)arg, sum = 0;
  for (long i = 0; i < n; i++) sum += i ^ (sum >> 3);
  g_worker = sum;
  return 0;
}

__attribute__((noipa)) unsigned long step_once(unsigned long acc, long i) {
  return acc * 31 + (unsigned long)(i ^ (long)(acc >> 11)); /* MARK: step_body */
}

/* Long enough (some 10,000 branches) for checkpoints to be due after the
 * join. */
__attribute__((noipa)) unsigned long work(long rounds) {
  unsigned long acc = (unsigned long)g_worker;
  for (long i = 0; i < rounds; i++) {
    acc = step_once(acc, i);
    g_rounds = i + 1;
  }
  g_acc = acc;
  return acc; /* MARK: work_done */
}

__attribute__((noipa)) int finish_line(unsigned long total) {
  return (int)(total & 1); /* MARK: finish_line */
}

int main(void) {
  pthread_t thread;
  if (pthread_create(&thread, 0, worker, (void *)1000L) != 0) return 2;
  pthread_join(thread, 0);
  long rounds = 3000; /* MARK: joined */
  unsigned long total = work(rounds);
  total += work(rounds / 2);
  return finish_line(total);
}
