/* The main thread spins, with no system call, until a thread it created
 * sets a flag (tests/integration/test_record_spin_thread.py). Under
 * recording the spinning thread stops at every pass; the new thread must
 * still get to run.
 */
#include <pthread.h>
#include <stdio.h>

static volatile int flag;

static void *set_flag(void *arg) {
  (void)arg;
  flag = 1;
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, set_flag, NULL);
  while (!flag) {
  }
  pthread_join(t, NULL);
  puts("the new thread ran"); /* MARK: done */
  return 0;
}
