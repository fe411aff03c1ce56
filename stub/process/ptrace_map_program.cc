// Memory of btstub's own in the traced program (the translating tracer's
// code cache and per-thread logs): mapped by an mmap the program's stopped
// thread makes, as copies get their counting page (ptrace_copy_counting.cc).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>
#include <string>

#include "stub/process/page_size.h"
#include "stub/process/proc_maps.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"
#include "stub/process/ptrace_seccomp.h"

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
  auto mapped = inject_in_program(tid, SYS_mmap, {at, size, prot, flags, ~uint64_t{0}, 0});
  if (mapped && mapped->result >= 0 && near != 0 && static_cast<uint64_t>(mapped->result) != at) {
    (void)inject_in_program(tid, SYS_munmap, {static_cast<uint64_t>(mapped->result), size});
    mapped->result = -EEXIST;  // a kernel that took the address as a hint
  }
  // Not in a fork: a checkpoint's copy stands at an original pc and runs
  // the original code, and the program's own children run outside the
  // cache from their first instruction (fork is a system call, made out of
  // it). Left out, the cache and logs cost each checkpoint's fork nothing
  // (their page tables are most of a small program's), and writes to them
  // after it no copy-on-write fault. A refusal only costs that speed.
  if (mapped && mapped->result >= 0) {
    auto advised = inject_in_program(tid, SYS_madvise, {static_cast<uint64_t>(mapped->result), size, MADV_DONTFORK});
    if (advised) mapped->signals_met.insert(mapped->signals_met.end(), advised->signals_met.begin(),
                                            advised->signals_met.end());
  }
  release_held(held);
  if (!mapped) return mapped.error();
  give_back_signals_met(tid, mapped->signals_met);
  if (mapped->result < 0) {
    return make_error(ErrorCode::Internal, "The program's mmap of " + hex(size) + " bytes failed (errno " +
                                               std::to_string(-mapped->result) + ")");
  }
  tracer_mappings_.emplace_back(static_cast<uint64_t>(mapped->result), size);
  return static_cast<uint64_t>(mapped->result);
}

void PtraceProcess::unmap_tracer_memory() {
  // By a thread, as they were mapped (detach has stopped them all: any
  // will do), unless the program is held at its end (no call can be made
  // there). A failure leaves a mapping behind, nothing worse: nothing
  // runs it from here on.
  if (!ending_ && !threads_.empty() && !tracer_mappings_.empty()) {
    const pid_t tid = threads_.begin()->first;
    std::vector<int> met;
    for (const auto& [begin, size] : tracer_mappings_) {
      auto unmapped = inject_in_program(tid, SYS_munmap, {begin, size});
      if (!unmapped) break;
      met.insert(met.end(), unmapped->signals_met.begin(), unmapped->signals_met.end());
    }
    give_back_signals_met(tid, met);
  }
  tracer_mappings_.clear();
  tracer_shared_.clear();
}

void PtraceProcess::give_back_signals_met(pid_t tid, const std::vector<int>& signals) {
  // Signals that came meanwhile are the program's: sent again, to be seen
  // as if they came just after. But for the SIGSTOP of an all-stop the
  // thread still owed: that one is ours, and done with.
  for (int signal : signals) {
    auto found = threads_.find(tid);
    if (signal == SIGSTOP && found != threads_.end() && found->second.sigstop_expected) {
      found->second.sigstop_expected = false;
      continue;
    }
    requeue_signal(tid, signal);
  }
}

Expected<void> PtraceProcess::seccomp_lets_through(pid_t tid, long number, const std::vector<uint64_t>& args) {
  auto pc = read_pc(tid);
  if (!pc) return pc.error();
  if (seccomp_answer(tid, number, args, *pc) == SeccompAnswer::Harmful) {
    return make_error(ErrorCode::NotSupported, "The program's seccomp filter would not let btstub's system call " +
                                                   std::to_string(number) + " through");
  }
  return {};
}

Expected<InjectedCall> PtraceProcess::inject_in_program(pid_t tid, long number, std::vector<uint64_t> args) {
  if (auto allowed = seccomp_lets_through(tid, number, args); !allowed) return allowed.error();
  int ended = -1;
  auto made = inject_syscall(tid, number, std::move(args), &ended);
  if (ended != -1) give_back_end(tid, ended);
  return made;
}

void PtraceProcess::give_back_end(pid_t tid, int status) {
  auto found = threads_.find(tid);
  if (found != threads_.end()) found->second.running = true;
  replay_.emplace_front(tid, status);
}

Expected<void> PtraceProcess::populate_program_memory(pid_t tid, uint64_t begin, uint64_t size) {
  const bool aligned = begin % kPageSize == 0 && size % kPageSize == 0 && size != 0 && begin + size > begin;
  const bool tracers = std::any_of(tracer_mappings_.begin(), tracer_mappings_.end(), [&](const auto& mapping) {
    return begin >= mapping.first && begin + size <= mapping.first + mapping.second;
  });
  if (!aligned || !tracers) {
    return make_error(ErrorCode::InvalidArgument,
                      "Not memory of btstub's in the program: " + hex(begin) + ", " + hex(size) + " bytes");
  }
  // A filter may kill the thread at a call it does not list (a program
  // may enter seccomp after its areas were mapped).
  if (under_seccomp(tid)) return make_error(ErrorCode::NotSupported, "The program runs under seccomp");
  const std::vector<pid_t> held = hold_others(tid);  // as map_program_memory
  auto made = inject_in_program(tid, SYS_madvise, {begin, size, MADV_POPULATE_WRITE});
  release_held(held);
  if (!made) return made.error();
  give_back_signals_met(tid, made->signals_met);
  if (made->result < 0) {
    return make_error(ErrorCode::Internal, "The program's madvise(MADV_POPULATE_WRITE) of " + hex(size) +
                                               " bytes failed (errno " + std::to_string(-made->result) + ")");
  }
  return {};
}

Expected<SharedMapping> PtraceProcess::map_shared_program_memory(pid_t tid, uint64_t near, uint64_t reach,
                                                                 uint64_t size) {
  if (under_seccomp(tid)) {
    return make_error(ErrorCode::NotSupported, "The program runs under seccomp: no memfd of btstub's there");
  }
  auto free = free_page_near(read_maps(pid_), near, reach, size);
  if (!free) return make_error(ErrorCode::NotSupported, "No room for " + hex(size) + " bytes near " + hex(near));
  const uint64_t at = *free;
  std::vector<int> met;
  std::optional<btstub::Error> lost;  // the thread is gone: no call can be made any more
  // One system call the thread makes: its result, or nullopt when it could
  // not be made (then every step after it fails, but for the clean-up,
  // which is still tried unless the thread is gone).
  auto call = [&](long number, std::vector<uint64_t> args) -> std::optional<long> {
    if (lost) return std::nullopt;
    auto made = inject_in_program(tid, number, std::move(args));
    if (!made) {
      if (made.error().code == ErrorCode::NoProcess) lost = made.error();
      return std::nullopt;
    }
    met.insert(met.end(), made->signals_met.begin(), made->signals_met.end());
    return made->result;
  };
  auto failed = [](const char* what, std::optional<long> result) {
    return make_error(ErrorCode::Internal, std::string("The program's ") + what + " failed" +
                                               (result ? " (errno " + std::to_string(-*result) + ")" : ""));
  };
  const std::vector<pid_t> held = hold_others(tid);  // as map_program_memory
  Expected<SharedMapping> out = make_error(ErrorCode::Internal, "unset");
  const uint64_t rw = PROT_READ | PROT_WRITE;
  const auto area = call(SYS_mmap, {at, size, rw, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, ~uint64_t{0}, 0});
  if (!area || *area < 0 || static_cast<uint64_t>(*area) != at) {
    if (area && *area >= 0) (void)call(SYS_munmap, {static_cast<uint64_t>(*area), size});
    out = failed("mmap", area && *area < 0 ? area : std::nullopt);
  } else {
    // The memfd's name: the fresh area's first byte, a zero (an empty name).
    const auto memfd = call(SYS_memfd_create, {at, MFD_CLOEXEC});
    std::optional<long> step;
    if (!memfd || *memfd < 0) {
      out = failed("memfd_create", memfd);
    } else if (step = call(SYS_ftruncate, {static_cast<uint64_t>(*memfd), size}); !step || *step < 0) {
      out = failed("ftruncate", step);
    } else if (step = call(SYS_mmap, {at, size, rw, MAP_SHARED | MAP_FIXED, static_cast<uint64_t>(*memfd), 0});
               !step || *step < 0 || static_cast<uint64_t>(*step) != at) {
      out = failed("shared mmap", step && *step < 0 ? step : std::nullopt);
    } else if (step = call(SYS_madvise, {at, size, MADV_DONTFORK}); !step || *step < 0) {
      // Unlike the private areas', needed: copies leave the area to the
      // program (tracer_shared_), so one that inherited it would share it.
      out = failed("madvise", step);
    } else {
      // The tracer may open the program's files (/proc/TID/fd, its own
      // fd table, even if it has left its process's).
      const std::string path = "/proc/" + std::to_string(tid) + "/fd/" + std::to_string(*memfd);
      const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      struct stat st {};
      if (fd < 0 || ::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != size) {
        out = make_error(ErrorCode::Internal, "Cannot open the program's shared memory (" + path + ")");
      } else {
        out = SharedMapping::map(fd, size, at);
        if (out) {
          tracer_shared_.push_back({at, at + size, static_cast<uint64_t>(st.st_ino)});
          tracer_mappings_.emplace_back(at, size);
        }
      }
      if (fd >= 0) ::close(fd);
    }
    if (memfd && *memfd >= 0) (void)call(SYS_close, {static_cast<uint64_t>(*memfd)});
    if (!out) (void)call(SYS_munmap, {at, size});
  }
  release_held(held);
  give_back_signals_met(tid, met);
  if (lost) return *lost;
  return out;
}

Expected<uint64_t> PtraceProcess::allocate_memory(pid_t tid, uint64_t size, int prot) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  if (size == 0 || size > (uint64_t{1} << 40)) return make_error(ErrorCode::InvalidArgument, "Cannot allocate " + hex(size) + " bytes");
  auto mapped = inject_in_program(tid, SYS_mmap, {0, size, static_cast<uint64_t>(prot), MAP_PRIVATE | MAP_ANONYMOUS,
                                               ~uint64_t{0}, 0});
  if (!mapped) return mapped.error();
  give_back_signals_met(tid, mapped->signals_met);
  if (mapped->result < 0) {
    return make_error(ErrorCode::InvalidArgument, "The program's mmap of " + hex(size) + " bytes failed (errno " +
                                                      std::to_string(-mapped->result) + ")");
  }
  return static_cast<uint64_t>(mapped->result);
}

Expected<void> PtraceProcess::free_memory(pid_t tid, uint64_t addr, uint64_t size) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  auto unmapped = inject_in_program(tid, SYS_munmap, {addr, size});
  if (!unmapped) return unmapped.error();
  give_back_signals_met(tid, unmapped->signals_met);
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
