// Copies of the program (process_copy.h): the injected clone, and running a
// copy along the recorded path without ever letting it make a system call
// of the program's but the repeated ones it expects (repeated_call.h).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <unordered_map>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "stub/process/copy_shared_memory.h"
#include "stub/process/process_copy.h"

#include <algorithm>
#include "stub/process/ptrace_internal.h"
#include "stub/process/restart_codes.h"
#include "stub/process/thread_signal_masks.h"
#include "stub/process/wait_routes.h"

namespace stub::process {
namespace {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

constexpr int kSyscallStop = SIGTRAP | 0x80;  // PTRACE_O_TRACESYSGOOD

// The longest a copy may run between two of its stops. A copy re-run along
// the recording stops within one checkpoint's stretch (100,000 branches
// by default: a millisecond natively); one that runs another way (a loop
// waiting for shared memory another process wrote after the checkpoint)
// may never stop. It is killed then, and the re-run fails: the answer is
// what the history determines, within gdb's default 2 s remote timeout.
constexpr std::chrono::milliseconds kCopyRunLimit{1000};

// Copies are our tracees beside the program's threads: a wait for any
// tracee (waitpid(-1) in PtraceProcess) may reap one of their statuses, which
// must then come to us, not be taken for a new thread of the program.
class CopyOwner final : public WaitOwner {
 public:
  static CopyOwner& instance() {
    static CopyOwner owner;
    return owner;
  }
  bool owns_thread(pid_t tid) const override { return pids_.count(tid) != 0; }
  void add(pid_t pid) { pids_.insert(pid); }
  void remove(pid_t pid) { pids_.erase(pid); }

 private:
  CopyOwner() { WaitRoutes::instance().enroll(this); }
  std::set<pid_t> pids_;
};

// The next wait status of copy `pid`, wherever it was reaped.
int wait_copy(pid_t pid, bool* overdue = nullptr) {
  auto& routes = WaitRoutes::instance();
  if (auto handed = routes.take_handed(&CopyOwner::instance(), pid)) return handed->second;
  if (auto early = routes.take_unclaimed(pid)) return *early;
  int status = 0;
  const pid_t got = overdue ? wait_with_limit(pid, &status, __WALL, kCopyRunLimit, overdue)
                            : wait_retry(pid, &status, __WALL);
  if (got != pid) return 0;
  return status;
}

bool stopped_by(int status, int signal) { return WIFSTOPPED(status) && (status >> 8) == signal; }

}  // namespace

namespace ptrace_detail {

bool write_tracee_memory(pid_t pid, uint64_t addr, const std::vector<uint8_t>& bytes) {
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(addr));
  ::close(fd);
  return n == static_cast<ssize_t>(bytes.size());
}

std::vector<uint8_t> read_tracee_memory(pid_t pid, uint64_t addr, std::size_t len) {
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  std::vector<uint8_t> out(len);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ssize_t n = ::pread(fd, out.data(), len, static_cast<off_t>(addr));
  ::close(fd);
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

namespace {

// A stopped thread's registers, and the two bytes under its pc, which now
// hold a `syscall` for an injected call.
struct BorrowedSite {
  user_regs_struct saved{};
  std::vector<uint8_t> original;
  std::vector<int> signals_met;  // the program's, met leaving an event stop

  // The thread gets its code and registers back.
  void put_back(pid_t tid) {
    (void)write_tracee_memory(tid, saved.rip, original);
    (void)do_ptrace(PTRACE_SETREGS, tid, 0, &saved);
  }
};

bool sent_sigtrap(pid_t tid);

// A ptrace event stop (an exec's, a fork's, a clone's, a vfork's or its
// end's) stands inside the program's system call: when the thread goes
// on, the kernel stores that call's result in rax, over an injected call's
// number (after an exec the call ran as read(); after a fork it would be
// the system call numbered by the child's pid). One step ends the call
// and stops at its exit, before any instruction of the program, where a
// call can be made. At the other event stops none is made: a vfork's (the
// step would wait for the child, which may be held), seccomp's (before
// the call: the step would make it), exit's. Signals met on the way are
// the program's; its end met on the way goes to `ended` (when given).
Expected<void> leave_event_stop(pid_t tid, std::vector<int>& signals_met, int* ended) {
  siginfo_t info{};
  if (!do_ptrace(PTRACE_GETSIGINFO, tid, 0, &info) || info.si_signo != SIGTRAP || (info.si_code & 0xff) != SIGTRAP ||
      (info.si_code >> 8) == 0) {
    return {};
  }
  const int event = info.si_code >> 8;
  if (event != PTRACE_EVENT_FORK && event != PTRACE_EVENT_CLONE && event != PTRACE_EVENT_EXEC &&
      event != PTRACE_EVENT_VFORK_DONE) {
    return make_error(ErrorCode::NotSupported, "The thread stands in a ptrace event stop");
  }
  user_regs_struct before{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &before); !r) return r.error();
  for (int resumes = 0;; ++resumes) {
    if (resumes > 64) return make_error(ErrorCode::Internal, "The thread did not leave its system call");
    if (auto r = do_ptrace(PTRACE_SINGLESTEP, tid, 0, nullptr); !r) return r.error();
    int status = 0;
    const pid_t waited = wait_retry(tid, &status, __WALL);
    if (waited != tid || !WIFSTOPPED(status)) {
      if (waited == tid && ended != nullptr) *ended = status;
      return make_error(ErrorCode::NoProcess, "The program ended during a system call of btstub's");
    }
    const int signal = WSTOPSIG(status);
    if (signal == SIGTRAP && (status >> 16) == 0 && !sent_sigtrap(tid)) break;  // the step's own
    if ((status >> 16) == 0) signals_met.push_back(signal);
  }
  user_regs_struct after{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &after); !r) return r.error();
  if (after.rip != before.rip) {
    return make_error(ErrorCode::Internal, "The thread ran on while leaving its system call (at " + hex(after.rip) + ")");
  }
  return {};
}

Expected<BorrowedSite> borrow_syscall_site(pid_t tid, int* ended) {
  BorrowedSite site;
  if (auto left = leave_event_stop(tid, site.signals_met, ended); !left) {
    for (int signal : site.signals_met) (void)::syscall(SYS_tkill, tid, signal);  // still the program's
    return left.error();
  }
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &site.saved); !r) return r.error();
  const uint64_t pc = site.saved.rip;
  site.original = read_tracee_memory(tid, pc, 2);
  if (site.original.size() != 2 || !write_tracee_memory(tid, pc, {0x0f, 0x05})) {
    return make_error(ErrorCode::MemoryFault, "Cannot borrow the code at " + hex(pc) + " for a system call");
  }
  return site;
}

// Whether the thread's SIGSYS stop is a seccomp filter trapping the system
// call `number` btstub made at the borrowed `syscall` at `pc`: then it is
// btstub's, never the program's (given to it, the signal's default action
// would end the program).
bool seccomp_trapped(pid_t tid, long number, uint64_t pc) {
  constexpr int kSysSeccomp = 1;  // SYS_SECCOMP (asm-generic/siginfo.h), not in glibc's headers
  siginfo_t info{};
  if (!do_ptrace(PTRACE_GETSIGINFO, tid, 0, &info)) return false;
  return info.si_code == kSysSeccomp && info.si_syscall == number &&
         reinterpret_cast<uint64_t>(info.si_call_addr) == pc + 2;
}

// Whether `signal` waits for the thread (sent to it alone) and is not
// blocked: resumed, it stops for it before running an instruction.
bool deliverable(pid_t tid, int signal) {
  const std::optional<ThreadSignalMasks> masks = read_thread_signal_masks(tid);
  return masks && ThreadSignalMasks::holds(masks->thread_pending & ~masks->blocked, signal);
}

// Whether the thread's SIGTRAP stop is a signal someone sent (kill,
// tgkill, sigqueue: si_code 0 or below), the program's to get, rather than
// a trap of btstub's single-stepping.
bool sent_sigtrap(pid_t tid) {
  siginfo_t info{};
  return do_ptrace(PTRACE_GETSIGINFO, tid, 0, &info) && info.si_code <= 0;
}

// A stop of a step over btstub's `syscall` (system call `number`) at `pc`:
// a seccomp trap of that call is btstub's (`trapped`), the step's own
// SIGTRAP nobody's, any other signal the program's (`signals_met`).
void sort_step_signal(pid_t tid, long number, uint64_t pc, int signal, bool& trapped,
                      std::vector<int>& signals_met) {
  if (signal == SIGSYS && seccomp_trapped(tid, number, pc)) {
    trapped = true;  // dropped, as the thread resumes with no signal
  } else if (signal != SIGTRAP || sent_sigtrap(tid)) {
    signals_met.push_back(signal);
  }
}

// Whether the call, the thread standing right past it with `rax`, is not
// done yet:
// - a signal it raised still waits: a trapped call raises two, the step's
//   SIGTRAP and the filter's SIGSYS, and the one not seen yet would reach
//   the program;
// - a signal interrupted it (a clone while a SIGCHLD came): rax holds one
//   of the kernel's restart codes (ERESTARTSYS, ERESTARTNOINTR,
//   ERESTARTNOHAND, ERESTART_RESTARTBLOCK; not in user headers), the
//   signal waits, and as the thread resumes from its stop the kernel
//   moves it back onto the `syscall` to make the call again.
// Either way a step stops for the waiting signal before any instruction.
bool call_unfinished(pid_t tid, bool trapped, uint64_t rax) {
  if (!trapped && is_restart_code(rax)) return true;
  return deliverable(tid, SIGTRAP) || (!trapped && deliverable(tid, SIGSYS));
}

// Single-steps `tid` until it stands right after the borrowed `syscall`
// (system call `number`) at `pc` (a step over it, or out of the event stop
// inside it); signals that stop it first are added to `signals_met`. rax
// there (-ENOSYS when a seccomp filter trapped the call, -EINTR when it is
// not done after 64 stops), or NoProcess when the program ended (its wait
// status in `ended`, when given).
Expected<long> step_past_syscall(pid_t tid, long number, uint64_t pc, std::vector<int>& signals_met,
                                 int* ended = nullptr) {
  bool trapped = false;
  for (int steps = 0; steps < 64; ++steps) {
    if (auto r = do_ptrace(PTRACE_SINGLESTEP, tid, 0, nullptr); !r) return r.error();
    int status = 0;
    const pid_t waited = wait_retry(tid, &status, __WALL);
    if (waited != tid || !WIFSTOPPED(status)) {
      if (waited == tid && ended != nullptr) *ended = status;
      return make_error(ErrorCode::NoProcess, "The program ended during a system call of btstub's");
    }
    sort_step_signal(tid, number, pc, WSTOPSIG(status), trapped, signals_met);
    user_regs_struct now{};
    if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &now); !r) return r.error();
    if (now.rip != pc + 2 || call_unfinished(tid, trapped, now.rax)) continue;
    // Failed as a call the kernel does not know: the signals met on the
    // way still go back to the program.
    return trapped ? -long{ENOSYS} : static_cast<long>(now.rax);
  }
  // Still not done (a filter answering a restart code every time, a storm
  // of signals): failed as interrupted, the signals met kept for the
  // program.
  return -long{EINTR};
}

}  // namespace

Expected<InjectedCall> inject_syscall(pid_t tid, long number, std::vector<uint64_t> args, int* ended) {
  auto site = borrow_syscall_site(tid, ended);
  if (!site) return site.error();
  args.resize(6, 0);
  user_regs_struct call = site->saved;
  call.rax = static_cast<uint64_t>(number);
  call.orig_rax = ~0ull;
  call.rdi = args[0], call.rsi = args[1], call.rdx = args[2], call.r10 = args[3], call.r8 = args[4], call.r9 = args[5];
  if (auto r = do_ptrace(PTRACE_SETREGS, tid, 0, &call); !r) {
    site->put_back(tid);
    return r.error();
  }
  // One step runs the `syscall`; a signal that comes first is kept for the program.
  InjectedCall result;
  result.signals_met = site->signals_met;
  auto rax = step_past_syscall(tid, number, call.rip, result.signals_met, ended);
  if (!rax && rax.error().code == ErrorCode::NoProcess) return rax.error();
  site->put_back(tid);
  if (!rax) return rax.error();
  result.result = *rax;
  return result;
}

Expected<InjectedClone> inject_clone(pid_t tid, int* ended) {
  auto site = borrow_syscall_site(tid, ended);
  if (!site) return site.error();
  user_regs_struct& saved = site->saved;
  const uint64_t pc = saved.rip;
  InjectedClone result;
  result.signals_met = site->signals_met;
  // Whatever happens next, the thread gets its code and registers back.
  user_regs_struct call = saved;
  call.rax = SYS_clone;
  call.orig_rax = ~0ull;  // no system call to restart: the kernel leaves rip alone
  call.rdi = kCopyCloneArgs[0];
  call.rsi = kCopyCloneArgs[1], call.rdx = kCopyCloneArgs[2], call.r10 = kCopyCloneArgs[3];
  call.r8 = kCopyCloneArgs[4], call.r9 = kCopyCloneArgs[5];
  if (auto r = do_ptrace(PTRACE_SETREGS, tid, 0, &call); !r) {
    site->put_back(tid);
    return r.error();
  }
  // Step to the clone event; a signal that comes first is kept for the
  // program. Stepped, not continued: a clone that fails (a resource limit,
  // a seccomp filter) makes no event, and a continued thread would run on
  // into the program's code with btstub's registers.
  int status = 0;
  bool trapped = false;
  for (int resumes = 0;; ++resumes) {
    if (resumes > 64) {  // as step_past_syscall: failed as interrupted, the signals kept
      site->put_back(tid);
      result.failed = EINTR;
      return result;
    }
    if (!do_ptrace(PTRACE_SINGLESTEP, tid, 0, nullptr)) {
      site->put_back(tid);
      return make_error(ErrorCode::Internal, "The program did not run the copy's clone");
    }
    const pid_t waited = wait_retry(tid, &status, __WALL);
    if (waited != tid || !WIFSTOPPED(status)) {
      if (waited == tid && ended != nullptr) *ended = status;
      return make_error(ErrorCode::NoProcess, "The program ended while being copied");
    }
    if ((status >> 8) == (SIGTRAP | (PTRACE_EVENT_CLONE << 8))) break;
    sort_step_signal(tid, SYS_clone, pc, WSTOPSIG(status), trapped, result.signals_met);
    user_regs_struct now{};
    if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &now); !r) {
      site->put_back(tid);
      return r.error();
    }
    // Past the `syscall` with no clone, and not to be made again: it failed.
    if (now.rip != pc + 2 || call_unfinished(tid, trapped, now.rax)) continue;
    site->put_back(tid);
    result.failed = trapped ? ENOSYS : static_cast<int>(-static_cast<long>(now.rax));
    return result;
  }
  unsigned long child = 0;
  if (!do_ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) || child == 0) {
    site->put_back(tid);
    return make_error(ErrorCode::Internal, "The copy's clone gave no process id");
  }
  result.child = static_cast<pid_t>(child);
  const int child_status = first_status_of_new_tracee(result.child);
  // Finish the system call: one step lands after the `syscall`.
  auto finished = step_past_syscall(tid, SYS_clone, pc, result.signals_met, ended);
  if (!finished && finished.error().code == ErrorCode::NoProcess) {
    ::kill(result.child, SIGKILL);
    return make_error(ErrorCode::NoProcess, "The program ended while being copied");
  }
  site->put_back(tid);
  if (!WIFSTOPPED(child_status)) return make_error(ErrorCode::Internal, "The copy did not start stopped");
  // The copy took its memory while the `syscall` was borrowed, and stands
  // after it with clone's 0 in rax: both as they were.
  bool ok = write_tracee_memory(result.child, pc, site->original) &&
            do_ptrace(PTRACE_SETREGS, result.child, 0, &saved).ok();
  long options = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL;
  ok = ok && do_ptrace(PTRACE_SETOPTIONS, result.child, 0, reinterpret_cast<void*>(options)).ok();
  // Out of the program's process group: a Ctrl-C for the program is not for it.
  (void)::setpgid(result.child, result.child);
  if (!ok) {
    ::kill(result.child, SIGKILL);
    (void)wait_retry(result.child, &status, __WALL);
    return make_error(ErrorCode::Internal, "Cannot set up the copy of the program");
  }
  return result;
}

}  // namespace ptrace_detail

std::unique_ptr<ProcessCopy> ProcessCopy::adopt(pid_t pid) {
  return std::unique_ptr<ProcessCopy>(new ProcessCopy(pid));
}

ProcessCopy::ProcessCopy(pid_t pid) : pid_(pid) {
  ::clock_gettime(CLOCK_REALTIME, &taken_);
  CopyOwner::instance().add(pid);
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  mem_fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

ProcessCopy::~ProcessCopy() {
  if (mem_fd_ >= 0) ::close(mem_fd_);
  ::kill(pid_, SIGKILL);
  // Reap it now: a stray zombie, or a status someone else's wait finds.
  for (int i = 0; i < 16; ++i) {
    int status = wait_copy(pid_);
    if (status == 0 || WIFEXITED(status) || WIFSIGNALED(status)) break;
  }
  CopyOwner::instance().remove(pid_);
}

Expected<void> ProcessCopy::pay_owed_bytes() {
  if (!owed_) return {};
  std::shared_ptr<const ProgramBytes> owed = std::move(owed_);
  owed_.reset();
  for (auto it = owed->begin(); it != owed->end();) {
    const uint64_t first = it->first, page_end = (first | 0xfff) + 1;
    auto end = std::lower_bound(it, owed->end(), page_end,
                                [](const auto& entry, uint64_t addr) { return entry.first < addr; });
    const uint64_t last = std::prev(end)->first;
    std::vector<uint8_t> bytes(last - first + 1);
    bool ok = read_mem_fd(mem_fd_, first, bytes.data(), bytes.size()) == bytes.size();
    for (; it != end; ++it) bytes[it->first - first] = it->second;
    if (!ok || !write_memory(first, bytes)) {
      usable_ = false;
      return make_error(ErrorCode::MemoryFault, "Cannot take a breakpoint out of the copy at " + hex(first));
    }
  }
  return {};
}

Expected<void> ProcessCopy::ready_to_run() {
  if (tsc_fault_owed_) {
    auto trapped = inject_syscall(pid_, SYS_prctl, {PR_SET_TSC, PR_TSC_SIGSEGV});
    if (!trapped || trapped->result != 0 || !trapped->signals_met.empty()) {
      usable_ = false;
      return make_error(ErrorCode::Internal, "Cannot make the copy's time stamp counter reads fault");
    }
    tsc_fault_owed_ = false;
  }
  return pay_owed_bytes();
}

Expected<std::unique_ptr<ProcessCopy>> ProcessCopy::fork() {
  if (!usable_) return make_error(ErrorCode::Internal, "The copy is unusable");
  if (auto ready = ready_to_run(); !ready) return ready.error();
  auto injected = inject_clone(pid_);
  if (!injected) return injected.error();
  if (injected->child == 0) {
    usable_ = injected->signals_met.empty();
    return make_error(ErrorCode::Internal, "A copy's clone failed (errno " + std::to_string(injected->failed) + ")");
  }
  auto copy = adopt(injected->child);
  copy->taken_ = taken_;  // it holds what this one holds
  copy->shared_files_ = shared_files_;
  copy->shared_snapshot_ = shared_snapshot_;
  if (!injected->signals_met.empty()) {
    usable_ = false;
    return make_error(ErrorCode::Internal, "A signal reached a copy of the program");
  }
  if (shared_snapshot_ && !shared_snapshot_->aliased.empty()) {
    if (auto r = separate_shared_views(copy->pid(), shared_snapshot_->aliased); !r) return r.error();
  }
  return copy;
}

Expected<uint64_t> ProcessCopy::pc() {
  user_regs_struct regs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, pid_, 0, &regs); !r) return r.error();
  return static_cast<uint64_t>(regs.rip);
}

Expected<void> ProcessCopy::set_pc(uint64_t pc) {
  user_regs_struct regs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, pid_, 0, &regs); !r) return r.error();
  regs.rip = pc;
  if (auto r = do_ptrace(PTRACE_SETREGS, pid_, 0, &regs); !r) return r.error();
  return {};
}

Expected<void> ProcessCopy::make_expected_call(const user_regs_struct& regs) {
  const long number = static_cast<long>(regs.orig_rax);
  const uint64_t pc = regs.rip - 2;  // past the two-byte `syscall`
  const std::array<uint64_t, 6> args{regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
  if (expected_calls_.empty() || expected_calls_.front().pc != pc || expected_calls_.front().number != number ||
      expected_calls_.front().args != args) {
    // Which call, and where: a copy that went another way says how.
    return make_error(ErrorCode::Internal, "The copy met a system call (number " + std::to_string(number) + " at " +
                                               hex(pc) + ") the recording did not have there");
  }
  const RepeatedCall call = expected_calls_.front();
  expected_calls_.pop_front();
  if (!made_again(call)) return give_result(regs, call);
  const std::array<uint64_t, 6> repeated = repeated_args(call);
  // The injected call steps from where the copy stands, which may be
  // run_to's execute breakpoint.
  const bool breakpoint_on = breakpoint_slot_ && breakpoint_on_;
  if (breakpoint_on) {
    if (auto r = enable_breakpoint(false); !r) return r;
  }
  auto made = inject_syscall(pid_, number, std::vector<uint64_t>(repeated.begin(), repeated.end()));
  if (breakpoint_on) {
    if (auto r = enable_breakpoint(true); !r) return r;
  }
  if (!made) return made.error();
  if (!made->signals_met.empty()) return make_error(ErrorCode::Internal, "A signal reached a copy of the program");
  if (made->result != call.result) {
    return make_error(ErrorCode::Internal, "The copy's " + call_name(number) + " at " + hex(pc) + " returned " +
                                               std::to_string(made->result) + " where the program's returned " +
                                               std::to_string(call.result));
  }
  return give_result(regs, call);
}

// Back as the program was after its call (the kernel keeps orig_rax).
Expected<void> ProcessCopy::give_result(const user_regs_struct& regs, const RepeatedCall& call) {
  user_regs_struct after = regs;
  after.rax = static_cast<uint64_t>(call.result);
  after.r11 = call.r11;  // the flags the program's `syscall` saved, under the tracer's step
  if (auto r = do_ptrace(PTRACE_SETREGS, pid_, 0, &after); !r) return r.error();
  return {};
}

Expected<ProcessCopy::Stop> ProcessCopy::resume_and_wait(bool single_step) {
  const int request = single_step ? PTRACE_SYSEMU_SINGLESTEP : PTRACE_SYSEMU;
  int status = 0;
  for (;;) {
    if (auto r = do_ptrace(request, pid_, 0, nullptr); !r) {
      usable_ = false;
      return r.error();
    }
    bool overdue = false;
    status = wait_copy(pid_, &overdue);
    ++stops_;
    if (!WIFSTOPPED(status)) {
      usable_ = false;
      if (overdue) {
        return make_error(ErrorCode::Internal, "The copy of the program ran more than " +
                                                   std::to_string(kCopyRunLimit.count()) +
                                                   " ms without reaching the point: it went another way than the "
                                                   "recording (memory another process wrote?)");
      }
      return make_error(ErrorCode::NoProcess, "The copy of the program ended");
    }
    if (!stopped_by(status, kSyscallStop)) break;
    user_regs_struct regs{};
    if (auto r = do_ptrace(PTRACE_GETREGS, pid_, 0, &regs); !r) {
      usable_ = false;
      return r.error();
    }
    if (auto made = make_expected_call(regs); !made) {
      usable_ = false;
      return made.error();
    }
    // A step that met the call has run it: it stands past the `syscall`.
    if (single_step) return Stop{};
  }
  if (WSTOPSIG(status) != SIGTRAP) {
    usable_ = false;
    return make_error(ErrorCode::Internal, std::string("The copy got signal ") + ::strsignal(WSTOPSIG(status)));
  }
  Stop stop;
  if (!armed_.empty() || breakpoint_slot_) {
    auto dr6 = do_ptrace(PTRACE_PEEKUSER, pid_, debugreg_offset(6), nullptr);
    if (dr6 && (*dr6 & 0xf) != 0) {
      stop.watch_hits = armed_.hits_for_dr6(static_cast<uint64_t>(*dr6));
      stop.at_breakpoint = breakpoint_slot_ && ((*dr6 >> *breakpoint_slot_) & 1) != 0;
      // Kernels before 5.11 keep DR6's bits from one trap to the next,
      // which matters only when a watch's and the breakpoint's mix: with
      // the breakpoint alone, every stop that is not a step is its.
      if (!armed_.empty()) (void)poke_debugreg(pid_, 6, 0);
    }
  }
  return stop;
}

Expected<void> ProcessCopy::arm(const DebugRegisterState& watches) {
  if (breakpoint_slot_) return make_error(ErrorCode::Internal, "The copy is running to a breakpoint");
  armed_ = watches.watches_only();
  for (int slot = 0; slot < DebugRegisterState::kSlotCount; ++slot) {
    if (auto r = poke_debugreg(pid_, slot, armed_.address(slot)); !r) return r;
  }
  // A run by breakpoint before (no watch armed) leaves its DR6 bit, which
  // kernels before 5.11 keep from trap to trap: the next stop would read
  // it as a watch's hit.
  if (auto r = poke_debugreg(pid_, 6, 0); !r) return r;
  return poke_debugreg(pid_, 7, armed_.dr7());
}

Expected<protocol::RegisterFile> ProcessCopy::registers() { return read_thread_registers(pid_); }

bool ProcessCopy::write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) {
  if (mem_fd_ < 0) return write_tracee_memory(pid_, addr, bytes);
  return ::pwrite(mem_fd_, bytes.data(), bytes.size(), static_cast<off_t>(addr)) ==
         static_cast<ssize_t>(bytes.size());
}

Expected<std::vector<uint8_t>> ProcessCopy::read_memory(uint64_t addr, std::size_t len) {
  if (auto paid = pay_owed_bytes(); !paid) return paid.error();
  std::vector<uint8_t> out(len);
  const std::size_t got = read_mem_fd(mem_fd_, addr, out.data(), len);
  if (got == 0) return make_error(ErrorCode::MemoryFault, "Cannot access memory at address " + hex(addr));
  out.resize(got);
  return out;
}

uint64_t ProcessCopy::shared_digest() {
  if (!shared_snapshot_) return shared_memory_digest({}, {});
  return shared_memory_digest(shared_snapshot_->ranges,
                              [this](uint64_t addr, std::size_t len) { return read_memory(addr, len); });
}

uint64_t ProcessCopy::proportional_bytes() const {
  std::ifstream rollup("/proc/" + std::to_string(pid_) + "/smaps_rollup");
  for (std::string line; std::getline(rollup, line);) {
    if (line.rfind("Pss:", 0) == 0) return std::strtoull(line.c_str() + 4, nullptr, 10) * 1024;
  }
  return 0;
}

}  // namespace stub::process
