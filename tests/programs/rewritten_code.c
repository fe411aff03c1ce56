// Code the program writes and runs with no system call between a write
// and the calls that run it (tests/integration/test_rewritten_code.py):
//   1. an anonymous page mapped read-write-execute, rewritten between
//      rounds of calls (a JIT's way);
//   2. an anonymous page made writable, written and made executable
//      again between two rounds (W^X: a system call around each write);
//   3. the program's own code made writable once, an immediate of
//      patched() then stored over between rounds of calls;
//   4. one memfd mapped three times (a W^X JIT's two views and more): code
//      stored through a writable view of its two pages and run through an
//      executable view of the first, a count kept in the second and read
//      through a read-only view of it, and a third count in a page of the
//      memfd 64 GiB further on (sparse), mapped on its own.
// An int3 a tracer put there is overwritten by the program's next store
// (the branch under it then runs unseen), and code decoded there before a
// store is stale after it. Natively it prints "jit round R: R" and
// "wx round R: 10R", "patch K: 200" / "patch K: 400" as the immediate says,
// "memfd round R: 100R seen R".
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int (*answer_fn)(int);

enum { kRounds = 5, kCalls = 200 };

// mov eax, imm32; ret
static void emit_answer(unsigned char* code, int32_t value) {
  code[0] = 0xb8;
  memcpy(code + 1, &value, 4);
  code[5] = 0xc3;
}

static int __attribute__((noipa)) call_often(answer_fn f) {
  int sum = 0;
  for (int i = 0; i < kCalls; ++i) sum += f(i);
  return sum / kCalls;
}

// At a page's start, its immediate found and rewritten by main.
__attribute__((noipa, aligned(4096))) int patched(int x) { return x * 0 + 0x11111111; }

static int __attribute__((noipa)) call_patched(void) {
  int count = 0;
  for (int i = 0; i < kCalls; ++i) count += patched(i) == 0x11111111 ? 1 : 2;
  return count;
}

// Part 4's, where a debugger reads them at any optimization.
static volatile int memfd_round, memfd_got;
static volatile int* volatile memfd_seen;
static volatile int* volatile memfd_far;

// Far enough that one object spanning it and the first pages could not be
// mapped on this machine (no overcommit past RAM): views that do not
// overlap are not one object.
static const off_t kFarOffset = (off_t)1 << 36;

static int memfd_views(long page) {
  const int fd = memfd_create("rewritten_code", 0);
  if (fd < 0 || ftruncate(fd, kFarOffset + page) != 0) return 105;
  unsigned char* rw = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  unsigned char* rx = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
  void* seen = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, page);
  void* far = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kFarOffset);
  if (rw == MAP_FAILED || rx == MAP_FAILED || seen == MAP_FAILED || far == MAP_FAILED) return 106;
  memfd_seen = seen;
  memfd_far = far;
  printf("memfd rw %p rx %p\n", (void*)rw, (void*)rx);
  for (int round = 1; round <= 3; ++round) {
    memfd_round = round;
    emit_answer(rw, 100 * round);
    ++*(volatile int*)(rw + page);
    ++*memfd_far;
    memfd_got = ((answer_fn)rx)(round);
    printf("memfd round %d: %d seen %d\n", memfd_round, memfd_got, *memfd_seen);  // MARK: memfd_print
  }
  return 0;
}

int main(void) {
  const long page = sysconf(_SC_PAGESIZE);
  unsigned char* jit = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char* wx = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (jit == MAP_FAILED || wx == MAP_FAILED) return 100;
  printf("jit %p wx %p patched %p\n", (void*)jit, (void*)wx, (void*)patched);
  for (int round = 1; round <= kRounds; ++round) {
    emit_answer(jit, round);
    printf("jit round %d: %d\n", round, call_often((answer_fn)jit));
  }
  for (int round = 1; round <= 2; ++round) {
    if (mprotect(wx, page, PROT_READ | PROT_WRITE) != 0) return 103;
    emit_answer(wx, 10 * round);
    if (mprotect(wx, page, PROT_READ | PROT_EXEC) != 0) return 104;
    printf("wx round %d: %d\n", round, call_often((answer_fn)wx));
  }
  unsigned char* code = (unsigned char*)patched;
  const uintptr_t code_page = (uintptr_t)code & ~(uintptr_t)(page - 1);
  if (mprotect((void*)code_page, page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return 101;
  unsigned char* imm = NULL;
  for (int i = 0; i < 64 && imm == NULL; ++i) {
    if (memcmp(code + i, "\x11\x11\x11\x11", 4) == 0) imm = code + i;
  }
  if (imm == NULL) return 102;
  printf("patch 0: %d\n", call_patched());
  for (int k = 0; k < 4; ++k) {
    const int32_t value = k & 1 ? 0x11111111 : 0x22222222;
    memcpy(imm, &value, 4);
    printf("patch %d: %d\n", k + 1, call_patched());  // MARK: patched_call
  }
  return memfd_views(page);
}
