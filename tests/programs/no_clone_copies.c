/* no_clone_copies.c: for tests/integration/test_copy_clone_refused.py. A
 * seccomp filter refuses the clone btstub makes the program run for each
 * checkpoint (flags exactly CLONE_PARENT, which the program never uses):
 * with EPERM (`errno`, as a sandbox's deny rule), a trap (`trap`: SIGSYS,
 * whose default action ends the program) or the program's end (`kill`:
 * SECCOMP_RET_KILL_PROCESS, systemd's SystemCallFilter default). Then the program works and
 * prints a checksum. Under --record every checkpoint fails; the program
 * must run on exactly as without btstub.
 *
 * No input but the mode: every run takes the same path. noipa keeps every
 * function a real call at -O2 too.
 */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noipa)) unsigned long mix(unsigned long acc, long i) { return acc * 31 + (unsigned long)(i ^ (long)(acc >> 7)); }

__attribute__((noipa)) unsigned long work(long rounds) {
  unsigned long acc = 1;
  for (long i = 0; i < rounds; i++) acc = mix(acc, i);
  return acc;
}

enum refusal { REFUSE_ERRNO, REFUSE_TRAP, REFUSE_KILL };

__attribute__((noipa)) int refuse_copies(enum refusal how) {
  const unsigned action = how == REFUSE_TRAP   ? SECCOMP_RET_TRAP
                          : how == REFUSE_KILL ? SECCOMP_RET_KILL_PROCESS
                                               : SECCOMP_RET_ERRNO | 1 /* EPERM */;
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLONE_PARENT, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof code / sizeof code[0], code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv) {
  if (argc != 2) return 3;
  enum refusal how = REFUSE_ERRNO;
  if (strcmp(argv[1], "trap") == 0) {
    how = REFUSE_TRAP;
  } else if (strcmp(argv[1], "kill") == 0) {
    how = REFUSE_KILL;
  } else if (strcmp(argv[1], "errno") != 0) {
    return 3;
  }
  if (refuse_copies(how) != 0) return 2;
  unsigned long sum = 0;
  /* System calls between the rounds: the tracer wants a checkpoint after each. */
  for (int round = 0; round < 5; round++) {
    sum += work(30000);
    if (getppid() == 0) sum++;
  }
  printf("sum %lu\n", sum);
  return 0;
}
