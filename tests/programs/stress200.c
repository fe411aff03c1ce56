/* stress200.c: 200 short threads, created and joined.
 *
 * Used by tests/integration/test_thread_stress.py. The first 100 are
 * created and joined one at a time (so a breakpoint in serial_fn is hit in
 * a fixed order: i = 0, 1, 2, ...), the other 100 in batches of 10 that
 * run at once. Each thread returns a value derived from its index; main
 * checks the sum, reaches all_joined() with only itself left, prints
 * "sum S" and exits with 0 if the sum is right, 1 if not.
 */
#include <pthread.h>
#include <stdio.h>

#define SERIAL 100
#define BATCHES 10
#define BATCH 10

void *serial_fn(void *arg) {
  long i = (long)arg;
  long v = i * 2 + 1; /* MARK: serial_fn */
  return (void *)v;
}

void *batch_fn(void *arg) {
  long i = (long)arg;
  return (void *)(i * 3);
}

void all_joined(long sum) {
  (void)sum; /* MARK: all_joined */
}

int main(void) {
  long sum = 0, expected = 0;
  for (long i = 0; i < SERIAL; i++) {
    pthread_t t;
    void *ret = NULL;
    if (pthread_create(&t, NULL, serial_fn, (void *)i) != 0) return 2;
    pthread_join(t, &ret);
    sum += (long)ret;
    expected += i * 2 + 1;
  }
  for (long b = 0; b < BATCHES; b++) {
    pthread_t t[BATCH];
    for (long j = 0; j < BATCH; j++) {
      if (pthread_create(&t[j], NULL, batch_fn, (void *)(b * BATCH + j)) != 0) return 2;
      expected += (b * BATCH + j) * 3;
    }
    for (long j = 0; j < BATCH; j++) {
      void *ret = NULL;
      pthread_join(t[j], &ret);
      sum += (long)ret;
    }
  }
  all_joined(sum);
  printf("sum %ld\n", sum);
  return sum == expected ? 0 : 1;
}
