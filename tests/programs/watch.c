/* watch.c: data for hardware watchpoints and hardware breakpoints.
 *
 * Used by tests/integration/test_watchpoints.py and tests/stub. `value` is
 * written three times and read twice; `other` is only read. store_pair()
 * writes all of `pair` with one 16-byte store: `pair[3]` keeps its value,
 * `pair[12]` changes (two watchpoints hit by one instruction).
 * Exit code: 0.
 */
#include <stdio.h>

volatile int value = 1;
volatile long other = 42;
int sink;
volatile unsigned char pair[16] __attribute__((aligned(16))) = {0, 0, 0, 7};

void touch(int n) {
  value = n;       /* MARK: touch_write */
  sink = value;    /* MARK: touch_read */
}

int reader(void) {
  return (int)other; /* MARK: reader_read */
}

void store_pair(void) {
  static const unsigned char next[16] __attribute__((aligned(16))) = {0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 9};
  __asm__ volatile("movups %1, %%xmm0\n\tmovups %%xmm0, %0"
                   : "=m"(*(volatile unsigned char(*)[16])pair)
                   : "m"(next)
                   : "xmm0", "memory"); /* MARK: store_pair */
}

int main(void) {
  store_pair();      /* MARK: main_store_pair */
  touch(2);          /* MARK: main_touch_2 */
  touch(3);          /* MARK: main_touch_3 */
  sink += reader();  /* MARK: main_reader */
  value = 10;        /* MARK: main_write_10 */
  printf("value=%d sink=%d\n", value, sink);
  return 0; /* MARK: main_return */
}
