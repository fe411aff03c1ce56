// Code that changes under the program's feet, each way a program can do it
// without a JIT's anonymous memory (which the translating tracer never
// copies): a function in a file the program maps executable (private,
// r-x: code the translating tracer may translate) is called often enough
// to be translated, then rewritten
//   1. through a second, writable shared mapping of the same file (no
//      system call at the moment of the write),
//   2. by pwrite(2) to the file,
//   3. by pwrite(2) to /proc/self/mem at the executable mapping's address,
//   4. by mprotect to writable, a store, mprotect back to r-x,
// and called again each time: it must return what its code now says. The
// program prints each case's value and exits with the number of stale
// answers (0 natively).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int (*answer_fn)(void);

// mov eax, imm32; ret
static void emit_answer(unsigned char* code, int32_t value) {
  code[0] = 0xb8;
  memcpy(code + 1, &value, 4);
  code[5] = 0xc3;
}

// Called through a pointer many times: translated, and its indirect target
// entered in the cache's table.
static int __attribute__((noinline)) call_often(answer_fn f) {
  int sum = 0;
  for (int i = 0; i < 200; ++i) sum += f();
  return sum / 200;
}

static int check(const char* label, answer_fn f, int expected) {
  int got = call_often(f);
  printf("%s: %d\n", label, got);
  return got != expected;
}

int main(void) {
  const long page = sysconf(_SC_PAGESIZE);
  char path[] = "/tmp/btstub-code-rewrite-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, page) != 0) return 100;
  unsigned char* shared = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (shared == MAP_FAILED) return 101;
  emit_answer(shared, 1);
  msync(shared, page, MS_SYNC);
  unsigned char* code = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  if (code == MAP_FAILED) return 102;
  answer_fn f = (answer_fn)code;
  int stale = check("first", f, 1);

  // 1. A store through the shared mapping: the private one has no copy of
  //    its own (never written), so it shows the file's new bytes.
  emit_answer(shared, 2);
  stale += check("shared mapping", f, 2);

  // 2. The file written with pwrite.
  unsigned char patch[6];
  emit_answer(patch, 3);
  if (pwrite(fd, patch, sizeof patch, 0) != (ssize_t)sizeof patch) return 103;
  stale += check("pwrite to the file", f, 3);

  // 3. /proc/self/mem writes through the protection (the private page
  //    becomes the program's own copy; the maps line stays r-x).
  int mem = open("/proc/self/mem", O_RDWR);
  if (mem < 0) return 104;
  emit_answer(patch, 4);
  if (pwrite(mem, patch, sizeof patch, (off_t)(uintptr_t)code) != (ssize_t)sizeof patch) return 105;
  close(mem);
  stale += check("/proc/self/mem", f, 4);

  // 4. Made writable, stored to, made executable again.
  if (mprotect(code, page, PROT_READ | PROT_WRITE) != 0) return 106;
  emit_answer(code, 5);
  if (mprotect(code, page, PROT_READ | PROT_EXEC) != 0) return 107;
  stale += check("mprotect and store", f, 5);

  // The mappings stay: the recorded history's blocks in them are decoded
  // from the program's memory after the run.
  close(fd);
  unlink(path);
  printf("stale answers: %d\n", stale);
  return stale;
}
