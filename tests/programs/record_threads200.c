/* record_threads200.c: creates and joins 200 short threads, in 10 waves of
 * 20, for tests/integration/test_record_btrace_threads.py under
 * `btstub --record` (every thread traced from its first instruction).
 * Thread 200 (the last) calls last_thread_checkpoint() so a test can stop
 * in it; main calls all_joined() after the last join, so a test can look at
 * the process before it exits. Prints "joined 200 sum S"; exit code 0.
 */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 200
#define WAVE 20

static int sums[NTHREADS + 1];

__attribute__((noinline)) void last_thread_checkpoint(int id) {
  sums[0] = id; /* MARK: last_checkpoint */
}

__attribute__((noinline)) void all_joined(int count) {
  sums[0] = count; /* MARK: all_joined */
}

static void *short_thread(void *arg) {
  int id = (int)(long)arg;
  int s = 0;
  for (int i = 0; i < 8; i++) s += id + i;
  sums[id] = s;
  if (id == NTHREADS) last_thread_checkpoint(id);
  return NULL;
}

int main(void) {
  pthread_t t[WAVE];
  int joined = 0;
  for (int base = 1; base <= NTHREADS; base += WAVE) {
    for (int i = 0; i < WAVE; i++) pthread_create(&t[i], NULL, short_thread, (void *)(long)(base + i));
    for (int i = 0; i < WAVE; i++) {
      pthread_join(t[i], NULL);
      joined++;
    }
  }
  long total = 0;
  for (int i = 1; i <= NTHREADS; i++) total += sums[i];
  all_joined(joined);
  printf("joined %d sum %ld\n", joined, total);
  return 0; /* MARK: main_return */
}
