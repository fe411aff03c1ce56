/* past_watch.c: values written by code and by a system call, to watch
 * while going backwards and forwards through the recorded past.
 *
 * Used by tests/integration/test_past_watch.py: `watch counter` and
 * `watch buf` with reverse-continue, continue and reverse-stepi from
 * MARK done. counter is written in bump() (some writes leave it unchanged,
 * which a watchpoint must not report), buf only by read() (the kernel).
 */
#include <stdio.h>
#include <unistd.h>

int counter;
char buf[16];

__attribute__((noipa)) void bump(int v) {
  counter += v; /* MARK: bump_body */
}

int main(void) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  if (write(fds[1], "watchme!", 8) != 8) return 1;
  counter = 1; /* MARK: counter_set */
  for (int i = 0; i < 4; i++) bump(i); /* MARK: bump_loop */
  if (read(fds[0], buf, 8) != 8) return 1; /* MARK: read_call */
  counter += buf[0]; /* MARK: counter_from_buf */
  bump(0);
  bump(5);
  printf("counter %d buf %s\n", counter, buf); /* MARK: done */
  return 0;
}
