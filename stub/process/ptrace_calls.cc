// do_ptrace() and wait_retry(): the only places btstub calls ptrace and
// waitpid, which is what lets the general registers be cached here.
//
// Why cache: each ptrace request costs a system call, and system calls are
// expensive under this kind of hypervisor. At every stop of a traced thread
// the process layer and the tracer each read the registers (pc, then the
// whole set), and the process layer rewinds rip after an int3 just before
// the tracer writes rip again. A stopped thread's registers change only
// through our own SETREGS, so one GETREGS per stop is enough, and a rewind
// that is followed by another write before the thread runs need never reach
// the kernel. The cache entry of a thread dies when it is resumed, detached
// or reaped by waitpid; a deferred write is flushed before any request that
// could let the thread run or leave.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include <elf.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iterator>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "stub/process/proc_file.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/wait_routes.h"

namespace stub::process::ptrace_detail {
namespace {

const char* request_name(int request) {
  switch (request) {
    case PTRACE_TRACEME: return "PTRACE_TRACEME";
    case PTRACE_PEEKDATA: return "PTRACE_PEEKDATA";
    case PTRACE_POKEDATA: return "PTRACE_POKEDATA";
    case PTRACE_PEEKUSER: return "PTRACE_PEEKUSER";
    case PTRACE_POKEUSER: return "PTRACE_POKEUSER";
    case PTRACE_CONT: return "PTRACE_CONT";
    case PTRACE_SINGLESTEP: return "PTRACE_SINGLESTEP";
    case PTRACE_GETREGS: return "PTRACE_GETREGS";
    case PTRACE_SETREGS: return "PTRACE_SETREGS";
    case PTRACE_GETREGSET: return "PTRACE_GETREGSET";
    case PTRACE_SETREGSET: return "PTRACE_SETREGSET";
    case PTRACE_ATTACH: return "PTRACE_ATTACH";
    case PTRACE_DETACH: return "PTRACE_DETACH";
    case PTRACE_SETOPTIONS: return "PTRACE_SETOPTIONS";
    case PTRACE_GETEVENTMSG: return "PTRACE_GETEVENTMSG";
    case PTRACE_GETSIGINFO: return "PTRACE_GETSIGINFO";
    case PTRACE_SETSIGINFO: return "PTRACE_SETSIGINFO";
    case PTRACE_PEEKSIGINFO: return "PTRACE_PEEKSIGINFO";
    default: return "ptrace request";
  }
}

struct CachedRegisters {
  user_regs_struct regs{};
  bool dirty = false;  // written here only: the kernel still has the old values
};

// Keyed by thread id. btstub is single-threaded; no lock is needed.
std::unordered_map<pid_t, CachedRegisters>& cache() {
  static std::unordered_map<pid_t, CachedRegisters> entries;
  return entries;
}

// Requests that neither let the thread run nor change its general registers.
bool leaves_registers(int request, uint64_t addr) {
  switch (request) {
    case PTRACE_PEEKDATA:
    case PTRACE_PEEKTEXT:
    case PTRACE_POKEDATA:
    case PTRACE_POKETEXT:
    case PTRACE_PEEKUSER:
    case PTRACE_POKEUSER:  // only ever the debug registers
    case PTRACE_GETREGSET:
    case PTRACE_GETSIGINFO:
    case PTRACE_SETSIGINFO:
    case PTRACE_PEEKSIGINFO:
    case PTRACE_GETEVENTMSG:
    case PTRACE_SETOPTIONS:
      return true;
    case PTRACE_SETREGSET:
      return addr != NT_PRSTATUS;
    default:
      return false;
  }
}

btstub::Expected<long> raw_ptrace(int request, pid_t tid, uint64_t addr, void* data) {
  errno = 0;
  long result = ::ptrace(static_cast<__ptrace_request>(request), tid, reinterpret_cast<void*>(addr), data);
  if (result != -1 || errno == 0) return result;
  int err = errno;
  btstub::ErrorCode code = btstub::ErrorCode::Internal;
  if (err == ESRCH) code = btstub::ErrorCode::NoProcess;
  if (err == EIO || err == EFAULT) code = btstub::ErrorCode::MemoryFault;
  btstub::Error error = btstub::make_error(code, std::string(request_name(request)) + " on thread " +
                                                     std::to_string(tid) + ": " + std::strerror(err));
  errno = err;
  return error;
}

}  // namespace

btstub::Expected<long> do_ptrace(int request, pid_t tid, uint64_t addr, void* data) {
  auto& entries = cache();
  auto found = entries.find(tid);
  if (request == PTRACE_GETREGS) {
    if (found != entries.end()) {
      *static_cast<user_regs_struct*>(data) = found->second.regs;
      return 0;
    }
    auto r = raw_ptrace(request, tid, addr, data);
    if (r) entries[tid] = CachedRegisters{*static_cast<user_regs_struct*>(data), false};
    return r;
  }
  if (request == PTRACE_SETREGS) {
    auto r = raw_ptrace(request, tid, addr, data);
    if (r) {
      entries[tid] = CachedRegisters{*static_cast<const user_regs_struct*>(data), false};
    } else {
      if (found != entries.end()) entries.erase(found);  // whatever the kernel kept, ask it again
    }
    return r;
  }
  if (found != entries.end() && !leaves_registers(request, addr)) {
    if (found->second.dirty) {
      const int saved = errno;
      (void)raw_ptrace(PTRACE_SETREGS, tid, 0, &found->second.regs);
      errno = saved;
    }
    entries.erase(found);
  }
  return raw_ptrace(request, tid, addr, data);
}

void defer_set_registers(pid_t tid, const user_regs_struct& regs) { cache()[tid] = CachedRegisters{regs, true}; }

pid_t wait_retry(pid_t pid, int* status, int flags) {
  for (;;) {
    pid_t r = ::waitpid(pid, status, flags);
    if (r > 0) cache().erase(r);  // it ran, or is gone
    if (r >= 0 || errno != EINTR) return r;
  }
}

namespace {

volatile sig_atomic_t wait_overdue = 0;
void on_wait_overdue(int) { wait_overdue = 1; }

}  // namespace

pid_t wait_with_limit(pid_t pid, int* status, int flags, std::chrono::milliseconds limit, bool* overdue) {
  // Without SA_RESTART, so that the wait returns EINTR; the timer signals
  // this thread only (a process-wide SIGALRM could go to another thread).
  static const bool handled = [] {
    struct sigaction action {};
    action.sa_handler = on_wait_overdue;
    sigemptyset(&action.sa_mask);
    return ::sigaction(SIGALRM, &action, nullptr) == 0;
  }();
  thread_local const std::optional<timer_t> timer = []() -> std::optional<timer_t> {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGALRM;
    event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
    timer_t made{};
    if (::timer_create(CLOCK_MONOTONIC, &event, &made) != 0) return std::nullopt;
    return made;
  }();
  if (!handled || !timer) return wait_retry(pid, status, flags);
  wait_overdue = 0;
  itimerspec arm{};
  arm.it_value.tv_sec = static_cast<time_t>(limit.count() / 1000);
  arm.it_value.tv_nsec = static_cast<long>((limit.count() % 1000) * 1000000);
  (void)::timer_settime(*timer, 0, &arm, nullptr);
  pid_t r = 0;
  for (;;) {
    r = ::waitpid(pid, status, flags);
    if (r >= 0 || errno != EINTR) break;
    if (wait_overdue) {
      wait_overdue = 0;
      *overdue = true;
      (void)::kill(pid, SIGKILL);
    }
  }
  const itimerspec off{};
  (void)::timer_settime(*timer, 0, &off, nullptr);
  if (r > 0) cache().erase(r);
  return r;
}

int first_status_of_new_tracee(pid_t tid) {
  if (auto early = WaitRoutes::instance().take_unclaimed(tid)) return *early;
  int status = 0;
  return wait_retry(tid, &status, __WALL) == tid ? status : 0;
}

std::vector<std::string> thread_stat_fields(pid_t pid, pid_t tid) {
  std::string text =
      read_proc_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat").value_or("");
  std::vector<std::string> fields;
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return fields;
  std::istringstream in(text.substr(close + 2));
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

}  // namespace stub::process::ptrace_detail
