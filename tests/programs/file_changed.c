/* file_changed.c: reads a file through a private read-only mapping, and
 * changes the file after (test_past_file_changed).
 *
 *   file_changed_O0 PATH
 *
 * Writes "AAAA" to PATH, maps it MAP_PRIVATE and PROT_READ, reads
 * a = page[0] ('A'), calls mark1(), writes "BBBB" over the file with
 * pwrite, reads b = page[0] ('B': the page the program never wrote is the
 * file's cache), calls mark2(), prints "a=A b=B".
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

const char *page;
int a, b;

__attribute__((noipa)) void mark1(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noipa)) void mark2(void) { __asm__ volatile("" ::: "memory"); }

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, "AAAA", 4) != 4) return 1;
  page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  if (page == MAP_FAILED) return 1;
  a = page[0];
  mark1();
  if (pwrite(fd, "BBBB", 4, 0) != 4) return 1;
  b = page[0];
  mark2();
  printf("a=%c b=%c\n", a, b);
  close(fd);
  return 0;
}
