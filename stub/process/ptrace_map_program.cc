// Memory of btstub's own in the traced program (the translating tracer's
// code cache and per-thread logs): mapped by an mmap the program's stopped
// thread makes, as copies get their counting page (ptrace_copy_counting.cc).
#include <sys/mman.h>
#include <sys/syscall.h>

#include <cerrno>
#include <csignal>

#include "stub/process/proc_maps.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

Expected<uint64_t> PtraceProcess::map_program_memory(pid_t tid, uint64_t near, uint64_t reach, uint64_t size,
                                                     bool executable) {
  uint64_t at = 0;
  uint64_t flags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (near != 0) {
    auto free = free_page_near(read_maps(pid_), near, reach, size);
    if (!free) return make_error(ErrorCode::NotSupported, "No room for " + hex(size) + " bytes near " + hex(near));
    at = *free;
    flags |= MAP_FIXED_NOREPLACE;
  }
  const uint64_t prot = PROT_READ | PROT_WRITE | (executable ? PROT_EXEC : 0);
  // The `syscall` borrows the bytes under the thread's pc: no other thread
  // may run through them meanwhile (the translating tracer maps memory for
  // one thread while others run).
  const std::vector<pid_t> held = hold_others(tid);
  auto mapped = inject_syscall(tid, SYS_mmap, {at, size, prot, flags, ~uint64_t{0}, 0});
  if (mapped && mapped->result >= 0 && near != 0 && static_cast<uint64_t>(mapped->result) != at) {
    (void)inject_syscall(tid, SYS_munmap, {static_cast<uint64_t>(mapped->result), size});
    mapped->result = -EEXIST;  // a kernel that took the address as a hint
  }
  // Not in a fork: a checkpoint's copy stands at an original pc and runs
  // the original code, and the program's own children run outside the
  // cache from their first instruction (fork is a system call, made out of
  // it). Left out, the cache and logs cost each checkpoint's fork nothing
  // (their page tables are most of a small program's), and writes to them
  // after it no copy-on-write fault. A refusal only costs that speed.
  if (mapped && mapped->result >= 0) {
    auto advised = inject_syscall(tid, SYS_madvise, {static_cast<uint64_t>(mapped->result), size, MADV_DONTFORK});
    if (advised) mapped->signals_met.insert(mapped->signals_met.end(), advised->signals_met.begin(),
                                            advised->signals_met.end());
  }
  release_held(held);
  if (!mapped) return mapped.error();
  // Signals that came meanwhile are the program's: sent again, to be seen
  // as if they came just after. But for the SIGSTOP of an all-stop the
  // thread still owed: that one is ours, and done with.
  for (int signal : mapped->signals_met) {
    auto found = threads_.find(tid);
    if (signal == SIGSTOP && found != threads_.end() && found->second.sigstop_expected) {
      found->second.sigstop_expected = false;
      continue;
    }
    requeue_signal(tid, signal);
  }
  if (mapped->result < 0) {
    return make_error(ErrorCode::Internal, "The program's mmap of " + hex(size) + " bytes failed (errno " +
                                               std::to_string(-mapped->result) + ")");
  }
  return static_cast<uint64_t>(mapped->result);
}

Expected<uint64_t> PtraceProcess::allocate_memory(pid_t tid, uint64_t size, int prot) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  if (size == 0 || size > (uint64_t{1} << 40)) return make_error(ErrorCode::InvalidArgument, "Cannot allocate " + hex(size) + " bytes");
  auto mapped = inject_syscall(tid, SYS_mmap, {0, size, static_cast<uint64_t>(prot), MAP_PRIVATE | MAP_ANONYMOUS,
                                               ~uint64_t{0}, 0});
  if (!mapped) return mapped.error();
  for (int signal : mapped->signals_met) requeue_signal(tid, signal);
  if (mapped->result < 0) {
    return make_error(ErrorCode::InvalidArgument, "The program's mmap of " + hex(size) + " bytes failed (errno " +
                                                      std::to_string(-mapped->result) + ")");
  }
  return static_cast<uint64_t>(mapped->result);
}

Expected<void> PtraceProcess::free_memory(pid_t tid, uint64_t addr, uint64_t size) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  auto unmapped = inject_syscall(tid, SYS_munmap, {addr, size});
  if (!unmapped) return unmapped.error();
  for (int signal : unmapped->signals_met) requeue_signal(tid, signal);
  if (unmapped->result < 0) {
    return make_error(ErrorCode::InvalidArgument, "The program's munmap at " + hex(addr) + " failed (errno " +
                                                      std::to_string(-unmapped->result) + ")");
  }
  return {};
}

std::vector<uint64_t> PtraceProcess::user_breakpoints() const {
  std::vector<uint64_t> out;
  out.reserve(breakpoints_.size());
  for (const auto& [addr, saved] : breakpoints_) out.push_back(addr);
  return out;
}

}  // namespace stub::process
