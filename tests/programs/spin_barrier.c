// Threads meet at a barrier of their own that spins in user space, with no
// system call (test_thread_fairness.py): the threads that arrived first
// spin until the last one arrives, so each must be run in its turn, and a
// server that serves only the spinning threads' stops never ends.
//
//   spin_barrier [THREADS]   (default 4, at most 16)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int arrived;
static int threads;
static volatile unsigned long spins[16];

static void* worker(void* arg) {
  long id = (long)arg;
  __sync_fetch_and_add(&arrived, 1);
  while (arrived < threads) spins[id]++;
  return NULL;
}

int main(int argc, char** argv) {
  threads = argc > 1 ? atoi(argv[1]) : 4;
  if (threads < 1 || threads > 16) threads = 4;
  pthread_t t[16];
  for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void*)i);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  printf("all %d arrived\n", arrived);
  return 0;
}
