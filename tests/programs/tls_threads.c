/* Thread-local variables for test_tls.py: one in the program (main_tls),
   one in a shared library it links (lib_tls, libs/tls_lib.c) and errno,
   with different values in the main thread and a second one. The worker
   stops at worker_stop twice, its values changed in between, and so does
   the main thread at main_stop once the worker is joined: a reverse
   continue from a second stop finds the first stop's values. */
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libs/in_system_call.h"

extern __thread int lib_tls;
void lib_tls_set(int value);

__thread int main_tls = 1;

void worker_stop(void) {}
void main_stop(void) {}

static void* worker(void* arg) {
  (void)arg;
  /* From when the main thread waits in pthread_join's futex it runs no
     code until this thread ends: whatever stop of this thread the test
     makes, the main thread stands still (a copy of this thread then
     stands for the program in the past). */
  wait_until_in_system_call(getpid(), SYS_futex);
  main_tls = 20;
  lib_tls_set(200);
  errno = EINVAL;
  worker_stop();
  main_tls = 21;
  lib_tls_set(201);
  errno = ERANGE; /* MARK: set_range */
  worker_stop();
  return 0;
}

int main(void) {
  main_tls = 10;
  lib_tls_set(100);
  errno = ENOENT;
  pthread_t thread;
  pthread_create(&thread, 0, worker, 0);
  pthread_join(thread, 0);
  main_tls = 11;
  lib_tls_set(101);
  errno = EDOM;
  main_stop();
  main_tls = 12;
  lib_tls_set(102);
  errno = EILSEQ;
  main_stop();
  return lib_tls == 102 ? 0 : 1;
}
