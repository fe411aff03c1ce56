/* pthread_cancel of two threads blocked in read and sleep, for
 * test_glibc_signals.py: glibc cancels a thread with its own signal
 * (SIGCANCEL, the kernel's 32), which gdbserver delivers without a stop
 * once libthread_db knows the program's threads. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int cleaned, pipe_fds[2];

void mark(int step) { (void)step; }

static void cleanup(void* amount) { cleaned += (int)(long)amount; }

static void* reader(void* arg) {
  (void)arg;
  pthread_cleanup_push(cleanup, (void*)1L);
  char byte;
  read(pipe_fds[0], &byte, 1); /* nothing is ever written */
  pthread_cleanup_pop(0);
  return 0;
}

static void* sleeper(void* arg) {
  (void)arg;
  pthread_cleanup_push(cleanup, (void*)10L);
  sleep(100);
  pthread_cleanup_pop(0);
  return 0;
}

int main(void) {
  if (pipe(pipe_fds) != 0) return 99;
  pthread_t r, s;
  pthread_create(&r, 0, reader, 0);
  pthread_create(&s, 0, sleeper, 0);
  usleep(100000); /* both blocked */
  mark(1);
  pthread_cancel(r);
  pthread_cancel(s);
  void *rr, *rs;
  pthread_join(r, &rr);
  pthread_join(s, &rs);
  mark(2);
  printf("cleaned %d canceled %d %d\n", cleaned, rr == PTHREAD_CANCELED, rs == PTHREAD_CANCELED);
  return cleaned;
}
