/* past_shared.c: memory the program shares with other processes, written
 * in a loop, to go back into (tests/integration/test_past_shared.py).
 *
 * Usage: past_shared DIR [big]. tick(i), for i = 1..5000, writes i and a running
 * sum into an anonymous MAP_SHARED page, a MAP_SHARED file (DIR/shared.map),
 * a memfd and a SysV shared memory segment, and the sum into a private
 * global. Every 1,000 ticks commit() appends a row to DIR/rows.log with
 * write() and bumps the row count in the shared file, as SQLite in WAL mode
 * appends frames to its log and bumps its wal-index (a MAP_SHARED file).
 * A child forked at the start waits on a futex in the anonymous page and,
 * woken at the end, prints what it sees there. Then the program prints
 * every sum and the rows it reads back from the log.
 *
 * With `big`, tick also writes a sum into a 16 MiB anonymous MAP_SHARED
 * mapping, more than btstub copies into a checkpoint (its past is unknown).
 *
 * Going back must never change any of it: the output and both files must
 * be byte for byte a run's without a debugger.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kTicks = 5000, kCommitEvery = 1000, kPage = 4096, kBig = 16 << 20 };

long *anon;     /* MAP_SHARED | MAP_ANONYMOUS */
long *filemap;  /* MAP_SHARED of DIR/shared.map: [2] counts the rows */
long *memfdmap; /* MAP_SHARED of a memfd */
long *sysv;     /* shmat of a SysV segment */
long *big;      /* MAP_SHARED | MAP_ANONYMOUS, kBig bytes, with `big` */
long priv;
int rows_fd;

static void *map_fd(int fd) {
  if (ftruncate(fd, kPage) != 0) exit(2);
  void *p = mmap(NULL, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) exit(2);
  return p;
}

__attribute__((noipa)) void tick(long i) {
  anon[0] = i; /* MARK: tick_body */
  anon[1] += i;
  filemap[0] = i;
  filemap[1] += i;
  memfdmap[1] += i;
  sysv[1] += i;
  if (big) big[1] += i;
  priv += i;
}

__attribute__((noipa)) void commit(long i) {
  char row[64];
  int n = snprintf(row, sizeof row, "row %ld sum %ld\n", i, filemap[1]);
  if (write(rows_fd, row, (size_t)n) != n) exit(3);
  filemap[2] += 1; /* MARK: commit_index */
}

static long futex(long *word, int op, int value) {
  return syscall(SYS_futex, (int *)word, op, value, NULL, NULL, 0);
}

int main(int argc, char **argv) {
  if (argc < 2) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/shared.map", argv[1]);
  int map_fd_ = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  snprintf(path, sizeof path, "%s/rows.log", argv[1]);
  rows_fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (map_fd_ < 0 || rows_fd < 0) return 2;
  filemap = map_fd(map_fd_);
  memfdmap = map_fd(memfd_create("past_shared", 0));
  anon = mmap(NULL, kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int shm = shmget(IPC_PRIVATE, kPage, IPC_CREAT | 0600);
  sysv = shm < 0 ? (void *)-1 : shmat(shm, NULL, 0);
  if (anon == MAP_FAILED || sysv == (void *)-1) return 2;
  shmctl(shm, IPC_RMID, NULL); /* gone with the last detach */
  if (argc > 2 && strcmp(argv[2], "big") == 0) {
    big = mmap(NULL, kBig, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (big == MAP_FAILED) return 2;
  }

  pid_t parent = getpid();
  pid_t watcher = fork();
  if (watcher == 0) {
    /* Gone with the program, also when a debugger kills it first. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) return 0;
    while (__atomic_load_n((int *)&anon[4], __ATOMIC_ACQUIRE) == 0) futex(&anon[4], FUTEX_WAIT, 0);
    printf("watcher: anon=%ld file=%ld memfd=%ld sysv=%ld rows=%ld\n", anon[1], filemap[1], memfdmap[1], sysv[1],
           filemap[2]);
    return 0;
  }

  for (long i = 1; i <= kTicks; i++) {
    tick(i); /* MARK: tick_call */
    if (i % kCommitEvery == 0) commit(i);
  }

  __atomic_store_n((int *)&anon[4], 1, __ATOMIC_RELEASE);
  futex(&anon[4], FUTEX_WAKE, 1);
  waitpid(watcher, NULL, 0);
  msync(filemap, kPage, MS_SYNC);
  printf("anon=%ld file=%ld memfd=%ld sysv=%ld priv=%ld rows=%ld\n", anon[1], filemap[1], memfdmap[1], sysv[1], priv,
         filemap[2]); /* MARK: report */
  if (big) printf("big=%ld\n", big[1]);
  char log[4096];
  ssize_t got = pread(rows_fd, log, sizeof log - 1, 0);
  log[got > 0 ? got : 0] = '\0';
  fputs(log, stdout);
  return 0;
}
