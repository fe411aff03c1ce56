/* no_memfd.c: for tests/integration/test_translate_differential.py. The
 * main thread works, then installs a seccomp filter that kills the
 * process at a memfd_create (as allow-list sandboxes kill at calls they do
 * not list) and starts a thread that works too: the translating tracer
 * shares the main thread's log with btstub (a memfd mapped in both, made
 * before the filter), and must not make a memfd in the second thread
 * (the filter would kill the program), but read its log through the
 * process layer, with the same history either way. The filter also traps
 * the madvise btstub makes for that log: the trap is btstub's, never a
 * SIGSYS for the program.
 *
 * No input: every run takes the same path. noipa keeps every function a
 * real call at -O2 too.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

unsigned long g_main, g_worker;

__attribute__((noipa)) unsigned long mix(unsigned long acc, long i) { return acc * 31 + (unsigned long)(i ^ (long)(acc >> 7)); }

__attribute__((noipa)) unsigned long work(long rounds) {
  unsigned long acc = 1;
  for (long i = 0; i < rounds; i++) acc = mix(acc, i);
  return acc;
}

__attribute__((noipa)) void *worker(void *arg) {
  g_worker = work((long)arg);
  return 0;
}

/* memfd_create kills the process from here on, in this thread and every
 * thread it starts; madvise(MADV_DONTFORK) traps (SIGSYS, whose default
 * action ends the process): the program never makes that call, btstub
 * does for the second thread's private log, and must take the trap as its
 * own. */
__attribute__((noipa)) int forbid_memfd(void) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_DONTFORK, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof code / sizeof code[0], code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(void) {
  g_main = work(4000);
  if (forbid_memfd() != 0) return 2;
  pthread_t thread;
  if (pthread_create(&thread, 0, worker, (void *)4000L) != 0) return 4;
  pthread_join(thread, 0);
  g_main += work(2000);
  return (int)(g_main & 0);
}
