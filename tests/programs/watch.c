/* watch.c: data for hardware watchpoints and hardware breakpoints.
 *
 * Used by tests/integration/test_watchpoints.py and tests/stub. `value` is
 * written three times and read twice; `other` is only read.
 * Exit code: 0.
 */
#include <stdio.h>

volatile int value = 1;
volatile long other = 42;
int sink;

void touch(int n) {
  value = n;       /* MARK: touch_write */
  sink = value;    /* MARK: touch_read */
}

int reader(void) {
  return (int)other; /* MARK: reader_read */
}

int main(void) {
  touch(2);          /* MARK: main_touch_2 */
  touch(3);          /* MARK: main_touch_3 */
  sink += reader();  /* MARK: main_reader */
  value = 10;        /* MARK: main_write_10 */
  printf("value=%d sink=%d\n", value, sink);
  return 0; /* MARK: main_return */
}
