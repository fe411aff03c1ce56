/* lldb_session.c: what tests/integration/test_lldb.py drives LLDB through,
 * against btstub and against lldb-server.
 *
 * main sorts three numbers with qsort (a breakpoint in the comparison
 * function has libc frames below it), stores into `watched` once (a
 * watchpoint), then starts two threads that spin until both are running
 * and call hit() at the same moment: both can hit one breakpoint in hit()
 * together, and both hits must be reported. add() is there for LLDB's
 * `expression` to call.
 * Output: "total=3 watched=42"; exit code 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int arrived; /* workers that are running */
int total;                   /* hit() adds each worker's id */
int watched;

__attribute__((noinline)) void hit(int id) {
  __atomic_add_fetch(&total, id, __ATOMIC_SEQ_CST); /* MARK: hit_body */
}

__attribute__((noinline)) int add(int a, int b) { return a + b; }

static int compare(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y); /* MARK: compare_body */
}

/* Both workers spin, on their own cores, until both run: they then call
   hit() within a few instructions of each other. */
static void *worker(void *arg) {
  __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < 2) {
  }
  hit((int)(long)arg);
  return NULL;
}

int main(void) {
  int values[3] = {3, 1, 2};
  qsort(values, 3, sizeof values[0], compare);
  watched = values[0] + 41; /* MARK: watch_store */
  pthread_t threads[2];
  for (long i = 0; i < 2; i++) pthread_create(&threads[i], NULL, worker, (void *)(i + 1));
  for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
  printf("total=%d watched=%d\n", total, watched); /* MARK: report */
  return 0;
}
