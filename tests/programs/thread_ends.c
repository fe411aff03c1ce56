/* thread_ends.c: threads that end the way all-stop finds hard.
 *
 * Used by tests/integration/test_thread_ends.py. The first argument picks:
 *   exec    a second thread execs /proc/self/exe "after" while main waits
 *           in pthread_join; the new image calls after_exec() and exits 0.
 *   leader  main starts a thread and leaves with pthread_exit; the thread
 *           joins main (returns once main is gone), calls leader_gone()
 *           and the process exits 0 when it returns.
 *   alone   main starts a thread that calls in_thread() and returns; main
 *           joins it, calls joined() and exits 0 (with scheduler-locking
 *           on, gdb resumes only the thread, which exits).
 *   group   as alone, but the thread ends the process with exit(3).
 *   stopped main calls at_rest() and exits 0 (the test kills it there).
 *   running main starts a thread that sleeps in a loop, waits until it
 *           runs, and exits with code 6 while it does.
 *   leader-exec main starts a thread that sleeps in a loop, waits until it
 *           runs, calls before_exec() and execs /proc/self/exe "after"
 *           itself (the leader execs; the kernel ends the thread).
 * Prints one line per step; exit code 0, 2 on a bad argument.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_t main_thread;

int after_exec(int n) {
  return n * 2; /* MARK: after_exec */
}

int leader_gone(int n) {
  return n + 1; /* MARK: leader_gone */
}

int in_thread(int n) {
  return n + 3; /* MARK: in_thread */
}

int joined(int n) {
  return n + 4; /* MARK: joined */
}

int at_rest(int n) {
  return n + 5; /* MARK: at_rest */
}

int before_exec(int n) {
  return n + 6; /* MARK: before_exec */
}

static void *exec_thread(void *arg) {
  (void)arg;
  execl("/proc/self/exe", "thread_ends", "after", (char *)NULL);
  perror("execl");
  return NULL;
}

static void *leader_thread(void *arg) {
  (void)arg;
  pthread_join(main_thread, NULL);
  printf("leader gone %d\n", leader_gone(1));
  fflush(stdout);
  return NULL;
}

static volatile int sleeper_started;

static void *sleeper_thread(void *arg) {
  (void)arg;
  sleeper_started = 1;
  for (;;) usleep(1000);
  return NULL;
}

static void *alone_thread(void *arg) {
  printf("in thread %d\n", in_thread(1));
  fflush(stdout);
  if (arg != NULL) exit(3);
  return NULL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  pthread_t thread;
  setvbuf(stdout, NULL, _IONBF, 0);
  if (strcmp(mode, "after") == 0) {
    printf("after exec %d\n", after_exec(2));
    return 0;
  }
  if (strcmp(mode, "exec") == 0) {
    printf("exec from a thread\n");
    pthread_create(&thread, NULL, exec_thread, NULL);
    pthread_join(thread, NULL);
    return 1; /* not reached: the exec ends this image */
  }
  if (strcmp(mode, "leader") == 0) {
    main_thread = pthread_self();
    printf("leader leaves\n");
    pthread_create(&thread, NULL, leader_thread, NULL);
    pthread_exit(NULL);
  }
  if (strcmp(mode, "alone") == 0 || strcmp(mode, "group") == 0) {
    pthread_create(&thread, NULL, alone_thread, strcmp(mode, "group") == 0 ? &thread : NULL);
    pthread_join(thread, NULL);
    printf("joined %d\n", joined(1));
    return 0;
  }
  if (strcmp(mode, "running") == 0) {
    pthread_create(&thread, NULL, sleeper_thread, NULL);
    while (!sleeper_started) usleep(1000);
    printf("leaving while a thread runs\n");
    exit(6);
  }
  if (strcmp(mode, "leader-exec") == 0) {
    pthread_create(&thread, NULL, sleeper_thread, NULL);
    while (!sleeper_started) usleep(1000);
    printf("leader execs %d\n", before_exec(1));
    execl("/proc/self/exe", "thread_ends", "after", (char *)NULL);
    perror("execl");
    return 1;
  }
  if (strcmp(mode, "stopped") == 0) {
    printf("at rest %d\n", at_rest(1));
    return 0;
  }
  fprintf(stderr, "usage: thread_ends exec|leader|alone|group|running|stopped|leader-exec\n");
  return 2;
}
