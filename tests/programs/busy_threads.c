/* busy_threads.c: for tests/integration/test_translate_log_memory.py.
 * Sixteen threads, let go together (a barrier: all of them live by then),
 * each take about 900,000 branches with no system call between (a loop
 * that calls a noipa function), so that under the translating tracer each
 * fills its logs again and again. Joined, main reads /proc/self/smaps for
 * btstub's log areas (mapped near 0x7ea000000000, 0x901000 bytes each: an 8 MiB
 * log, then the slots and the indirect-target table) and prints how many
 * there are and how many of them have more than BOUND_KB resident (a
 * 2 MiB log, the table and the slots), then the threads' sum:
 *   areas N over_bound M (largest K kB)
 *   sum S
 * (no areas, natively and under the ptrace tracer). Exit code 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NTHREADS 16
#define ROUNDS 300000
#define BOUND_KB (2048 + 1024 + 4)

static pthread_barrier_t start;
static unsigned long sums[NTHREADS];

__attribute__((noipa)) unsigned long mix(unsigned long acc, long i) { return acc * 31 + (unsigned long)(i ^ (long)(acc >> 7)); }

static void *busy(void *arg) {
  const long id = (long)arg;
  pthread_barrier_wait(&start);
  unsigned long acc = (unsigned long)id;
  for (long i = 0; i < ROUNDS; i++) acc = mix(acc, i);
  sums[id] = acc;
  return NULL;
}

int main(void) {
  pthread_t threads[NTHREADS];
  pthread_barrier_init(&start, NULL, NTHREADS + 1);
  for (long i = 0; i < NTHREADS; i++) pthread_create(&threads[i], NULL, busy, (void *)i);
  pthread_barrier_wait(&start);
  unsigned long sum = 0;
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(threads[i], NULL);
    sum += sums[i];
  }
  FILE *smaps = fopen("/proc/self/smaps", "r");
  int areas = 0, in_area = 0, over = 0;
  unsigned long largest = 0;
  char line[512];
  while (smaps && fgets(line, sizeof line, smaps)) {
    unsigned long lo, hi, kb;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in_area = lo >= 0x7e8000000000ul && lo < 0x7ec000000000ul && hi - lo == 0x901000;
      areas += in_area;
    } else if (in_area && sscanf(line, "Rss: %lu kB", &kb) == 1) {
      over += kb > BOUND_KB;
      if (kb > largest) largest = kb;
    }
  }
  if (smaps) fclose(smaps);
  printf("areas %d over_bound %d (largest %lu kB)\nsum %lu\n", areas, over, largest, sum);
  return 0;
}
