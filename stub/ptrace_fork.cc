// fork and vfork of the debugged program. The child is reported by the
// kernel already traced and stopped; we do not debug it (gdb's fork events
// are not served yet), so it leaves without our int3s: a fork child has its
// own copy of the memory, which still holds every inserted breakpoint, and
// would die of SIGTRAP on the first it reaches (gdbserver does the same for
// a client that did not ask for fork events). A vfork child shares the
// parent's memory, so its breakpoints must stay for the parent.
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "stub/ptrace_internal.h"
#include "stub/ptrace_process.h"

namespace stub {
namespace {

using namespace ptrace_detail;

// Writes one byte into another process's memory: /proc/PID/mem, else one
// word at a time through PTRACE_POKEDATA (the child is stopped and traced).
bool write_child_memory(pid_t child, uint64_t addr, uint8_t byte) {
  std::string path = "/proc/" + std::to_string(child) + "/mem";
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = ::pwrite(fd, &byte, 1, static_cast<off_t>(addr));
    ::close(fd);
    if (n == 1) return true;
  }
  auto word = do_ptrace(PTRACE_PEEKDATA, child, addr, nullptr);
  if (!word) return false;
  long value = *word;
  std::memcpy(&value, &byte, 1);  // little-endian: the lowest byte is at addr
  return do_ptrace(PTRACE_POKEDATA, child, addr, reinterpret_cast<void*>(value)).ok();
}

}  // namespace

void PtraceProcess::handle_fork(pid_t parent, bool vfork) {
  unsigned long new_pid = 0;
  if (do_ptrace(PTRACE_GETEVENTMSG, parent, 0, &new_pid) && new_pid > 0) {
    pid_t child = static_cast<pid_t>(new_pid);
    int status = 0;
    // The child's first stop may already have been reaped by a wait for any
    // tracee (it then waits in early_status_, as a new thread's would).
    if (auto early = early_status_.find(child); early != early_status_.end()) {
      status = early->second;
      early_status_.erase(early);
    } else if (wait_retry(child, &status, __WALL) != child) {
      status = 0;
    }
    if (WIFSTOPPED(status)) {
      if (!vfork) {
        for (const auto& [addr, original] : breakpoints_) (void)write_child_memory(child, addr, original);
        // The branch tracer's int3s too: the child is not traced.
        for (const auto& [addr, int3] : trace_int3s_) (void)write_child_memory(child, addr, int3.original);
      }
      (void)do_ptrace(PTRACE_DETACH, child, 0, nullptr);
    }
  }
  resume_after_event_stop(parent);
}

}  // namespace stub
