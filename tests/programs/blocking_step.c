// A thread stands at a breakpoint on a system call that blocks until
// another thread acts (test_breakpoint_resume.py): a read of a pipe the
// main thread writes 100 ms after the reader is on its way. A step off
// that breakpoint with the other threads held would never end.
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

// The read's own `syscall`, at the global label read_syscall.
__attribute__((noinline)) static long read_raw(int fd, void* buf, long n) {
  long ret;
  __asm__ volatile(
      ".globl read_syscall\n"
      "read_syscall:\n\t"
      "syscall"
      : "=a"(ret)
      : "a"(0L), "D"((long)fd), "S"(buf), "d"(n)
      : "rcx", "r11", "memory");
  return ret;
}

static void* reader(void* unused) {
  (void)unused;
  char c = 0;
  long n = read_raw(fds[0], &c, 1);
  printf("read %ld %c\n", n, c);
  return NULL;
}

int main(void) {
  if (pipe(fds) != 0) return 1;
  pthread_t t;
  pthread_create(&t, NULL, reader, NULL);
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  if (write(fds[1], "x", 1) != 1) return 1;
  pthread_join(t, NULL);
  return 0;
}
