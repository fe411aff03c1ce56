/* sanitized_run.c: a program built with -fsanitize=address and with
 * -fsanitize=thread (tests/programs/CMakeLists.txt: sanitized_asan,
 * sanitized_tsan), whose runtimes refuse to start when anything is mapped
 * in the ranges they keep for their shadow memory.
 *
 * Used by tests/integration/test_sanitized_programs.py: recorded by btstub
 * (whose logs and code cache live in the program's address space), it must
 * print the same line as natively and exit 0.
 * Two threads sum a heap array, one half each; prints "sum S".
 * The sanitizer's reports go to stderr whatever ASAN_OPTIONS' log_path
 * says (the test harness sends btstub's own there).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 20000

void __sanitizer_set_report_path(const char *path);

static long *values;
static long halves[2];

static void *sum_half(void *arg) {
  long h = (long)arg;
  long s = 0;
  for (long i = h * (N / 2); i < (h + 1) * (N / 2); i++) s += values[i];
  halves[h] = s;
  return NULL;
}

int main(void) {
  __sanitizer_set_report_path("stderr");
  values = malloc(N * sizeof *values);
  for (long i = 0; i < N; i++) values[i] = i % 97;
  pthread_t t;
  pthread_create(&t, NULL, sum_half, (void *)1L);
  sum_half((void *)0L);
  pthread_join(t, NULL);
  printf("sum %ld\n", halves[0] + halves[1]);
  free(values);
  return 0;
}
