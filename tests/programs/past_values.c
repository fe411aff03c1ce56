/* past_values.c: values for tests/integration/test_past_values.py to read
 * in the recorded past (every register and byte, compared with gdb's
 * record full at the same points).
 *
 * Single-threaded. Each kind of input is taken in its own function: a file
 * it writes and reads back (O_TMPFILE: no name, nothing left behind), a
 * pipe, the clocks (clock_gettime through the vDSO before record_start,
 * the clock_gettime and gettimeofday system calls after it), rdtsc,
 * malloc/free and an anonymous mmap, a signal with a handler, and two loops
 * without system calls. Globals, locals and arguments change as it runs.
 *
 * Where recording starts: record full single-steps (~100 us an
 * instruction), so the test starts it at MARK record_start, after
 * long_loop's 200,000 iterations (a few million instructions) and after
 * getpid() and the vDSO's clock_gettime (whose rdtscp record full cannot
 * record); btstub records from the first instruction, so to
 * reach any compared point it must get through that loop exactly. What
 * follows record_start is small (about 35,000 instructions at -O0, 30,000
 * of them short_loop's 2,000 iterations).
 *
 * The values that differ between two runs are the clocks, the TSC, the
 * pid and glibc's random numbers (the stack canary, the tcache key), and
 * only those: the test compares them within one run (the past
 * must show what the program got, as read at the live end). So they stay
 * raw (nothing is derived from them) and forget() wipes what the vDSO,
 * rdtsc and free() leave in caller-saved registers, flags and the dead
 * stack below, before any line the test stops at.
 *
 * noipa keeps every function a real call at -O2 too, so each has a frame
 * to step into, finish from and show in bt.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

long g_step;                 /* one more at each stage */
unsigned long g_sum;         /* checksum of everything read so far */
int g_pid;                   /* varies between runs */
unsigned long g_long_loop;
char g_file_buf[32];
long g_file_len;
char g_pipe_buf[16];
long g_pipe_len;
struct timespec g_early_ts;  /* varies between runs */
struct timespec g_ts;        /* varies between runs */
struct timeval g_tv;         /* varies between runs */
unsigned long g_tsc;         /* varies between runs */
int *g_heap;
long *g_map;
volatile sig_atomic_t g_signals;
int g_last_signal;
unsigned long g_short_loop;

/* Wipes what the clock and TSC reads leave behind: the stack below the
 * caller's frame, the caller-saved registers and the flags. */
__attribute__((noipa)) void forget(void) {
  char pad[2048];
  memset(pad, 0, sizeof pad);
  __asm__ volatile("" : : "r"(pad) : "memory");
  __asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t"
                   "xor %%esi, %%esi\n\txor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"
                   "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d\n\t"
                   "pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2"
                   : : : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
                     "xmm0", "xmm1", "xmm2", "cc");
}

__attribute__((noipa)) unsigned long mix(unsigned long acc, unsigned long v) {
  return (acc ^ v) * 0x100000001b3ul; /* MARK: mix_body */
}

/* No system call in here: a long stretch between two of them. */
__attribute__((noipa)) unsigned long long_loop(long n) {
  unsigned long acc = 7;
  for (long i = 0; i < n; i++) {
    acc = acc * 31 + (i ^ (acc >> 7));
  }
  g_long_loop = acc;
  return acc;
}

__attribute__((noipa)) long read_file(const char *text) {
  long len = (long)strlen(text);
  int fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
  if (fd < 0) exit(3);
  long wrote = write(fd, text, len);
  lseek(fd, 0, SEEK_SET);
  long got = read(fd, g_file_buf, sizeof g_file_buf - 1); /* MARK: file_read */
  close(fd);
  g_file_len = got;
  for (long i = 0; i < got; i++) g_sum = g_sum * 3 + (unsigned char)g_file_buf[i];
  g_step++;
  return wrote == got ? got : -1; /* MARK: file_done */
}

__attribute__((noipa)) long read_pipe(int word) {
  int fds[2];
  if (pipe(fds) != 0) exit(4);
  write(fds[1], &word, sizeof word);
  write(fds[1], "pipe!", 5);
  long got = read(fds[0], g_pipe_buf, sizeof g_pipe_buf); /* MARK: pipe_read */
  close(fds[0]);
  close(fds[1]);
  g_pipe_len = got;
  g_sum = mix(g_sum, (unsigned long)got);
  g_step++;
  return got; /* MARK: pipe_done */
}

/* Through the vDSO (no system call), before record_start: record full
 * cannot record the vDSO's rdtscp, btstub records it. */
__attribute__((noipa)) void early_time(void) {
  clock_gettime(CLOCK_REALTIME, &g_early_ts);
  forget();
}

/* The system calls themselves, so that record full records them too. */
__attribute__((noipa)) long take_time(long stage) {
  struct timespec ts;
  struct timeval tv;
  syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  syscall(SYS_gettimeofday, &tv, NULL);
  g_ts = ts;
  g_tv = tv;
  forget();
  g_step++; /* MARK: time_taken */
  return stage + 1;
}

__attribute__((noipa)) unsigned long read_tsc(void) {
  unsigned lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  unsigned long tsc = ((unsigned long)hi << 32) | lo;
  g_tsc = tsc;
  forget();
  g_step++; /* MARK: tsc_taken */
  return tsc;
}

__attribute__((noipa)) long use_heap(int count) {
  int *heap = malloc(count * sizeof *heap);
  int *spare = malloc(256);
  long *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (heap == NULL || spare == NULL || map == MAP_FAILED) exit(5);
  for (int i = 0; i < count; i++) heap[i] = i * i + (int)g_step;
  for (int i = 0; i < 8; i++) map[i] = (long)heap + i;
  free(spare);
  forget(); /* free() leaves glibc's random tcache key in a register */
  g_heap = heap;
  g_map = map;
  g_sum = mix(g_sum, (unsigned long)heap[count - 1] + (unsigned long)map[7]);
  g_step++;
  return heap[3] + map[1]; /* MARK: heap_done */
}

void on_usr1(int sig) {
  g_signals++;
  g_last_signal = sig; /* MARK: handler_body */
}

__attribute__((noipa)) int take_signal(int times) {
  int before = g_signals;
  signal(SIGUSR1, on_usr1);
  for (int i = 0; i < times; i++) raise(SIGUSR1);
  int after = g_signals;
  g_step++;
  return after - before; /* MARK: signal_done */
}

__attribute__((noipa)) unsigned long short_loop(int n) {
  unsigned long acc = g_sum;
  for (int i = 0; i < n; i++) {
    acc = acc * 31 + (unsigned long)(i ^ (int)(acc >> 9)); /* MARK: short_body */
  }
  g_short_loop = acc;
  g_step++;
  return acc;
}

__attribute__((noipa)) int finish_line(long stage, unsigned long total) {
  g_sum = mix(g_sum, total);
  return (int)(stage + (long)(g_sum & 1)); /* MARK: finish_line */
}

int main(void) {
  long stage = 0;
  unsigned long total = 0;
  g_pid = getpid();
  early_time();
  total += long_loop(200000);
  stage += 1; /* MARK: record_start */
  total += (unsigned long)read_file("past values 0123456789\n");
  total += (unsigned long)read_pipe(0x5a5a);
  stage = take_time(stage);
  total += read_tsc() != 0;
  total += (unsigned long)use_heap(24);
  total += (unsigned long)take_signal(2);
  total += short_loop(2000);
  int code = finish_line(stage, total);
  return code == 2 || code == 3 ? 0 : 1;
}
