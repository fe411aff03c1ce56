/* past_memory_calls.c: between marks, the heap grown by brk, anonymous
 * memory mapped and made partly read-only (test_past_memory_calls): system
 * calls a copy of the program makes again itself, and two sleeps and a
 * sched_yield, whose results a copy is given, so the recording takes no
 * checkpoint after them (stub/process/repeated_call.h); then calls that
 * take memory away and stay barriers: an mremap shrinking, the heap shrunk,
 * an munmap. No other system call runs from the first sbrk to the last
 * mark. Every mark's values depend on all the memory written before it,
 * and the addresses the calls returned are kept in globals: a copy that
 * got another address or lost a write shows other values there.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kPage = 4096, kWords = kPage / sizeof(unsigned long) };

unsigned long g_sum;
long g_stage;
char *g_brk0;
unsigned long *g_heap;
unsigned long *g_heap2;
unsigned long *g_map;
unsigned long *g_shrunk;
unsigned long *g_map2;
unsigned long g_after_unmap;

__attribute__((noipa)) void mark(long stage) {
  g_stage = stage;
  __asm__ volatile("" ::: "memory");
}

__attribute__((noipa)) void fill(unsigned long *p, size_t words, unsigned long seed) {
  for (size_t i = 0; i < words; ++i) {
    p[i] = (seed * (i + 1)) ^ g_sum;
    g_sum += p[i] >> 3;
  }
}

int main(void) {
  g_brk0 = sbrk(0);
  g_heap = sbrk(64 * kPage);
  if (g_heap == (void *)-1) return 1;
  fill(g_heap, 64 * kWords, 3);
  mark(1);
  /* Made again by copies. */
  g_map = mmap(NULL, 32 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_map == MAP_FAILED) return 1;
  fill(g_map, 32 * kWords, 5);
  /* Given their result by the recording: sleeps that ended, a yield. */
  struct timespec ms = {0, 1000 * 1000};
  if (syscall(SYS_nanosleep, &ms, NULL) != 0 || usleep(1000) != 0 || sched_yield() != 0) return 1;
  g_sum += (unsigned long)ms.tv_nsec;
  mark(2);
  if (mprotect(g_map, 16 * kPage, PROT_READ) != 0) return 1;
  g_sum += g_map[7] + g_map[16 * kWords + 9];
  g_heap2 = sbrk(16 * kPage);
  if (g_heap2 == (void *)-1) return 1;
  fill(g_heap2, 16 * kWords, 11);
  mark(3);
  /* Barriers: they take bytes away. */
  g_shrunk = mremap(g_map, 32 * kPage, 16 * kPage, 0);
  if (g_shrunk == MAP_FAILED || sbrk(-48 * (long)kPage) == (void *)-1) return 1;
  g_map2 = mmap(NULL, 8 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_map2 == MAP_FAILED) return 1;
  fill(g_map2, 8 * kWords, 7);
  g_sum += g_shrunk[kWords + 1] + g_heap[31 * kWords];
  mark(4);
  g_after_unmap = g_map2[8 * kWords - 1];
  if (munmap(g_map2, 8 * kPage) != 0) return 1;
  g_sum += g_after_unmap;
  mark(5);
  return 0;
}
