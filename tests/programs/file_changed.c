/* file_changed.c: reads files through private read-only mappings, and
 * changes the files after (test_past_file_changed).
 *
 *   file_changed_O0 PATH TMPFS_PATH
 *
 * Three files hold "AAAA" and are mapped MAP_PRIVATE, PROT_READ: PATH, a
 * memfd, and TMPFS_PATH (on tmpfs, also mapped shared and writable: a
 * write there leaves its ctime alone). Reads a = page[0] ('A') of each,
 * calls mark1(), changes each file: pwrite "BBBB" over PATH and the memfd,
 * a store of "BBBB" through the shared mapping of TMPFS_PATH; reads
 * b = page[0] ('B': pages the program never wrote are the file's cache),
 * calls mark2(), prints "a=AAA b=BBB".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *page, *memfd_page, *tmpfs_page;
char a[4], b[4];

__attribute__((noipa)) void mark1(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noipa)) void mark2(void) { __asm__ volatile("" ::: "memory"); }

static const char *map_private(int fd) {
  if (fd < 0 || pwrite(fd, "AAAA", 4, 0) != 4) return NULL;
  const char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  int mfd = memfd_create("file_changed", 0);
  int tfd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
  page = map_private(fd);
  memfd_page = map_private(mfd);
  tmpfs_page = map_private(tfd);
  char *twin = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, tfd, 0);
  if (!page || !memfd_page || !tmpfs_page || twin == MAP_FAILED) return 1;
  a[0] = page[0], a[1] = memfd_page[0], a[2] = tmpfs_page[0];
  mark1();
  if (pwrite(fd, "BBBB", 4, 0) != 4 || pwrite(mfd, "BBBB", 4, 0) != 4) return 1;
  memcpy(twin, "BBBB", 4);
  b[0] = page[0], b[1] = memfd_page[0], b[2] = tmpfs_page[0];
  mark2();
  printf("a=%s b=%s\n", a, b);
  unlink(argv[2]);
  return 0;
}
