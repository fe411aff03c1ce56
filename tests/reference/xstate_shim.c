/* Preloaded into gdb 13.1 and gdbserver 13.1 when they serve as a test's
 * reference (never into btstub or a debugged program): completes their
 * writes of the XSAVE register set to the size the kernel requires.
 *
 * Why: gdb 13.1 sizes its XSAVE buffer for the state components it knows
 * (at most 2,696 bytes, up to PKRU). Linux accepts PTRACE_SETREGSET of
 * NT_X86_XSTATE only at its own full size, which on CPUs with AMX includes
 * the tile data (11,008 bytes), and refuses anything else with EFAULT.
 * gdbserver then warns "ptrace(regsets_store_inferior_registers): Bad
 * address" at every resume, and record full cannot go back ("Couldn't write
 * extended state status"). Here such a write is completed: the kernel's
 * current area is read, the caller's bytes (its prefix, header included)
 * laid over it, and the whole written. Components beyond the caller's
 * buffer keep the values they have, which is what the caller meant, as it
 * does not know them. Where the sizes already agree (CPUs without AMX)
 * nothing changes.
 *
 * The shim removes itself from LD_PRELOAD at load, so nothing gdb or
 * gdbserver starts (the program, a shell, btstub) inherits it. When
 * XSTATE_SHIM_LOG names a file, each completed write appends one line to it
 * (the tests count them and say so in their output). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

/* Larger than any XSAVE area the kernel reports (AMX: 11,008 bytes). */
enum { kMaxXsave = 64 * 1024 };

typedef long (*ptrace_fn)(enum __ptrace_request, pid_t, void *, void *);

static void drop_self_from_preload(void) {
  const char *preload = getenv("LD_PRELOAD");
  if (preload == NULL) return;
  Dl_info info;
  if (dladdr((void *)drop_self_from_preload, &info) == 0 || info.dli_fname == NULL) return;
  const char *self = info.dli_fname;
  const char *self_base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
  char kept[4096] = "";
  size_t used = 0;
  char *copy = strdup(preload);
  if (copy == NULL) return;
  for (char *save = NULL, *item = strtok_r(copy, ": ", &save); item != NULL;
       item = strtok_r(NULL, ": ", &save)) {
    const char *base = strrchr(item, '/') ? strrchr(item, '/') + 1 : item;
    if (strcmp(base, self_base) == 0) continue;
    int n = snprintf(kept + used, sizeof kept - used, "%s%s", used ? ":" : "", item);
    if (n < 0 || (size_t)n >= sizeof kept - used) break;
    used += (size_t)n;
  }
  free(copy);
  if (used == 0)
    unsetenv("LD_PRELOAD");
  else
    setenv("LD_PRELOAD", kept, 1);
}

__attribute__((constructor)) static void xstate_shim_init(void) { drop_self_from_preload(); }

static void log_completed(pid_t pid, size_t theirs, size_t kernels) {
  const char *path = getenv("XSTATE_SHIM_LOG");
  if (path == NULL || *path == '\0') return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[160];
  int n = snprintf(line, sizeof line, "%s: XSAVE write of %zu bytes to thread %d completed to %zu\n",
                   program_invocation_short_name, theirs, (int)pid, kernels);
  if (n > 0) (void)!write(fd, line, (size_t)n);
  close(fd);
}

/* SETREGSET of NT_X86_XSTATE with fewer bytes than the kernel's area:
 * returns the result of writing the completed area. */
static long complete_xstate_write(ptrace_fn real, pid_t pid, struct iovec *theirs) {
  unsigned char *full = malloc(kMaxXsave);
  if (full == NULL) {
    errno = ENOMEM;
    return -1;
  }
  struct iovec whole = {full, kMaxXsave};
  long result = real(PTRACE_GETREGSET, pid, (void *)(long)NT_X86_XSTATE, &whole);
  if (result == 0 && theirs->iov_len < whole.iov_len) {
    memcpy(full, theirs->iov_base, theirs->iov_len);
    size_t kernels = whole.iov_len;
    result = real(PTRACE_SETREGSET, pid, (void *)(long)NT_X86_XSTATE, &whole);
    if (result == 0) log_completed(pid, theirs->iov_len, kernels);
  } else if (result == 0) {
    result = real(PTRACE_SETREGSET, pid, (void *)(long)NT_X86_XSTATE, theirs);
  }
  int saved = errno;
  free(full);
  errno = saved;
  return result;
}

long ptrace(enum __ptrace_request request, ...) {
  static ptrace_fn real;
  if (real == NULL) real = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
  va_list ap;
  va_start(ap, request);
  pid_t pid = va_arg(ap, pid_t);
  void *addr = va_arg(ap, void *);
  void *data = va_arg(ap, void *);
  va_end(ap);
  if (request == PTRACE_SETREGSET && (long)addr == NT_X86_XSTATE && data != NULL)
    return complete_xstate_write(real, pid, (struct iovec *)data);
  return real(request, pid, addr, data);
}
