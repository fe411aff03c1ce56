/* readonly_later.c: memory that is read-only now but was not in the past
 * (test_past_readonly, which runs btstub without checkpoints: the past
 * from the history alone). A second thread waits meanwhile.
 *
 * At mark1: `page` (anonymous) holds 1 and is writable; nothing is mapped
 * at `later` yet. Then page[0] = 2 and an mprotect makes it read-only;
 * `later` is mapped, written and made read-only. At mark2 both are
 * read-only: their present bytes are not what mark1 saw. `greeting` points
 * into .rodata, which never changes.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LATER ((void *)0x200000000)

long *page;
char *later;
const char *greeting = "hello from rodata";

__attribute__((noipa)) void mark1(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noipa)) void mark2(void) { __asm__ volatile("" ::: "memory"); }

static void *idle(void *arg) {
  for (;;) pause();
  return arg;
}

int main(void) {
  pthread_t waiter;
  pthread_create(&waiter, NULL, idle, NULL);
  page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 1;
  page[0] = 1;
  mark1();
  page[0] = 2;
  mprotect(page, 4096, PROT_READ);
  later = mmap(LATER, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (later != LATER) return 1;
  strcpy(later, "written after mark1");
  mprotect(later, 4096, PROT_READ);
  mark2();
  printf("%ld %s %s\n", page[0], later, greeting);
  return 0;
}
