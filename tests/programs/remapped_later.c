/* remapped_later.c: mappings that change after mark1 in ways their present
 * bytes hide (test_past_remapped, which runs btstub without checkpoints:
 * the past from the history alone). A second thread waits meanwhile (the
 * changes count for every thread's history).
 *
 * argv[1..4]: files the test wrote before the program started, holding
 * "first file", "second file", "file bytes" and "kept file". At mark1:
 * `swapped` maps the first; `dropped` maps the third privately and holds
 * what the program wrote over it; `code` maps the third executable; `kept`
 * maps the fourth. After mark1 the second file is mapped where the first
 * was, `dropped` loses its written page (MADV_DONTNEED: the file's bytes
 * again) and becomes read-only, and `code` is made writable, patched and
 * executable again. At mark2 the first three read as constant file bytes
 * or code, none of them what mark1 saw; `kept` never changed (nor does a
 * write to a descriptor that does not exist).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

char *swapped, *dropped, *code, *kept;

__attribute__((noipa)) void mark1(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noipa)) void mark2(void) { __asm__ volatile("" ::: "memory"); }

static void *idle(void *arg) {
  for (;;) pause();
  return arg;
}

static char *map_file(const char *path, int prot) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return MAP_FAILED;
  char *at = mmap(NULL, 4096, prot, MAP_PRIVATE, fd, 0);
  close(fd);
  return at;
}

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  pthread_t waiter;
  pthread_create(&waiter, NULL, idle, NULL);
  swapped = map_file(argv[1], PROT_READ);
  dropped = map_file(argv[3], PROT_READ | PROT_WRITE);
  code = map_file(argv[3], PROT_READ | PROT_EXEC);
  kept = map_file(argv[4], PROT_READ);
  if (swapped == MAP_FAILED || dropped == MAP_FAILED || code == MAP_FAILED || kept == MAP_FAILED) return 1;
  strcpy(dropped, "written before mark1");
  mark1();
  /* A write that fails (no such descriptor) changes nothing: the code and
   * the kept file must still read in the past. */
  if (write(999, "x", 1) != -1) return 1;
  int second = open(argv[2], O_RDONLY);
  if (second < 0 || munmap(swapped, 4096) != 0) return 1;
  if (mmap(swapped, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, second, 0) != swapped) return 1;
  close(second);
  if (madvise(dropped, 4096, MADV_DONTNEED) != 0 || mprotect(dropped, 4096, PROT_READ) != 0) return 1;
  if (mprotect(code, 4096, PROT_READ | PROT_WRITE) != 0) return 1;
  strcpy(code, "patched code");
  if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) return 1;
  mark2();
  printf("%s|%s|%s|%s\n", swapped, dropped, code, kept);
  return 0;
}
