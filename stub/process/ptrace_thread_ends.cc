// Threads that end where all-stop cannot see them: a leader that leaves
// (pthread_exit) before its threads, and a process killed from outside
// while we hold it stopped.
//
// A leader that ends while other threads live becomes a zombie that reports
// nothing until they have all ended (the kernel delays its exit status), so
// a blocking wait for its stop would never return. Like gdbserver, which
// checks for zombie leaders whenever it waits, the leader is then taken off
// the thread list (gdb's `info threads` no longer shows it) and kept only
// to receive the process's exit status.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <sched.h>
#include <algorithm>
#include <atomic>
#include <stdlib.h>

#include <string>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {

using namespace ptrace_detail;

// Gone from /proc counts as a zombie too.
bool PtraceProcess::leader_is_zombie() const {
  auto fields = thread_stat_fields(pid_, pid_);
  return fields.empty() || fields[0] == "Z" || fields[0] == "X";
}

// A wait for one thread's stop, in an all-stop or while holding threads.
// For the leader of a process with other threads it polls: 0 means the
// leader turned out to be a zombie and will not stop (leader_exited).
pid_t PtraceProcess::wait_for_stop(pid_t tid, int* status) {
  if (tid != pid_ || threads_.size() == 1) return reap(tid, status, __WALL);
  for (unsigned round = 0;; ++round) {
    pid_t reaped = reap(tid, status, __WALL | WNOHANG);
    if (reaped != 0) return reaped;
    if (leader_is_zombie()) return 0;
    // A live leader stops within a time slice; yield to it first (it often
    // shares our CPU), then sleep between looks (it may be in a vfork).
    if (round < 64) {
      ::sched_yield();
    } else {
      timespec pause{0, 200 * 1000};
      ::nanosleep(&pause, nullptr);
    }
  }
}

void PtraceProcess::leader_exited() {
  auto found = threads_.find(pid_);
  if (found == threads_.end()) return;
  ThreadState& leader = found->second;
  put_back_lifted_breakpoint(leader);
  leader.exited = true;
  leader.running = false;
  leader.sigstop_expected = false;
  leader.pending.reset();
  leader.deferred.reset();
  if (hook_ != nullptr && hook_->traces(pid_)) hook_->on_thread_exited(pid_);
  release_trace_int3(pid_);
}

// A thread that ended but whose exit nobody has reaped yet still counts:
// fork_copy would refuse a program that runs alone again. pthread_join
// returns as soon as the ending thread clears its tid, before the kernel
// reports its exit, and the stops the tracer absorbs meanwhile wait for the
// joining thread alone; so after a join the ended thread stays listed until
// the client's next stop. Here its exit is reaped as a wait would have
// seen it: at once if reported, and also if the thread is already past the
// point of no return (PF_EXITING: it can only die, soon), since a waiting
// client or a checkpoint would otherwise miss the point right after the
// join. A thread still running stays; so does the leader (leader_exited).
void PtraceProcess::reap_ended_threads(pid_t except) {
  constexpr std::size_t kFlags = 9 - 3;  // /proc stat field 9, "flags"
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING
  std::vector<pid_t> ended;
  for (const auto& [tid, thread] : threads_) {
    if (tid == except || tid == pid_ || thread.exited) continue;
    siginfo_t info{};
    if (::waitid(P_PID, tid, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 && info.si_pid == tid) {
      if (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
        ended.push_back(tid);
      }
      continue;  // else a stop of its own, for the next wait
    }
    if (!thread.running) continue;
    auto fields = thread_stat_fields(pid_, tid);
    if (fields.size() > kFlags && (std::strtoul(fields[kFlags].c_str(), nullptr, 10) & kExiting) != 0) ended.push_back(tid);
  }
  for (pid_t tid : ended) {
    int status = 0;
    if (reap(tid, &status, __WALL) != tid) continue;
    if (WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_EXIT && tid != pid_) {
      // On its way out (PTRACE_O_TRACEEXIT): only the first thread's end
      // is ever held (handle_exit_event).
      if (do_ptrace(PTRACE_CONT, tid, 0, nullptr) && reap(tid, &status, __WALL) != tid) continue;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      // Not reported: a client that asked for thread events learns of
      // the end from the thread list, as after an all-stop.
      if (hook_ != nullptr && hook_->traces(tid)) hook_->on_thread_exited(tid);
      put_back_lifted_breakpoint(threads_.at(tid));
      release_trace_int3(tid);
      threads_.erase(tid);
    } else {
      replay_.emplace_back(tid, status);  // not the end after all: the next wait's
    }
  }
}

uint64_t PtraceProcess::next_creation_number() {
  static std::atomic<uint64_t> next{0};
  return next++;
}

std::vector<pid_t> PtraceProcess::threads() const {
  std::vector<std::pair<uint64_t, pid_t>> listed;
  for (const auto& [tid, state] : threads_) {
    if (!state.exited) listed.emplace_back(state.creation, tid);
  }
  std::sort(listed.begin(), listed.end());
  std::vector<pid_t> tids;
  for (const auto& entry : listed) tids.push_back(entry.second);
  return tids;
}

// PTRACE_DETACH of a thread held stopped fails with ESRCH only when it left
// the stop without us: a SIGKILL from outside, which ends every thread.
// There is nothing left to let go then, and gdbserver answers OK too; the
// dead threads are reaped so that no zombie stays behind.
// A thread that was stopped and now refuses PTRACE_DETACH (ESRCH) was
// killed meanwhile: a thread let go before it ran exit_group, or exit, and
// ended the whole program while the rest were still ours (gdb's
// process-dies-while-detaching). It stays our tracee, a zombie the program's
// parent never sees end until we reap it: without this its waitpid hung for
// as long as btstub lived. gdbserver reaps it the same way (detach_one_lwp).
// A stop that comes first (PTRACE_EVENT_EXIT while recording) is let go.
// Bounded: a thread that refused for another reason (not stopped after
// all) must not hang btstub: after 2 s it is left as it is.
void PtraceProcess::reap_killed_while_detaching(pid_t tid) {
  constexpr int kReapWaitMs = 2000;
  int rounds = 0;
  for (int waited = 0; waited < kReapWaitMs && rounds < 4;) {
    int status = 0;
    const pid_t got = reap(tid, &status, __WALL | WNOHANG);
    if (got == 0) {
      ::usleep(1000);
      ++waited;
      continue;
    }
    if (got != tid) return;           // reaped before, or not ours
    if (!WIFSTOPPED(status)) return;  // exited: the zombie is gone
    if (do_ptrace(PTRACE_DETACH, tid, 0, nullptr)) return;
    ++rounds;
  }
}

Expected<void> PtraceProcess::detach_threads() {
  Expected<void> result;
  std::size_t detached = 0;
  std::size_t gone = 0;
  for (auto& [tid, state] : threads_) {
    if (state.exited) continue;
    // A signal kept while stopping all still belongs to the program, and
    // so does the one the client saw last and passes: the thread still
    // stands in its stop, so the kernel delivers it with its own siginfo.
    int deliver = state.pending && state.pending->signal != SIGTRAP ? state.pending->signal : 0;
    if (deliver != 0) {
      restore_kept_siginfo(tid, state);
    } else if (state.owed_signal != 0) {
      deliver = take_owed_signal(tid, state);
    } else {
      deliver = state.detach_signal;
    }
    auto r = do_ptrace(PTRACE_DETACH, tid, 0, signal_arg(deliver));
    if (r) {
      ++detached;
    } else if (r.error().code == btstub::ErrorCode::NoProcess) {
      ++gone;
      if (tid != pid_) reap_killed_while_detaching(tid);
    } else if (tid == pid_) {
      result = r.error();
    }
  }
  if (gone != 0 && detached == 0) (void)kill();  // reaps every thread
  return result;
}

// The options of a thread after launch or attach. PTRACE_O_TRACEEXIT only
// while the hook holds the program's end: otherwise every exit would stop
// once more, and a program killed from outside would linger in that stop
// (gdbserver's would be a zombie at once).
long PtraceProcess::ptrace_options(bool exit_events) const {
  return PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACESYSGOOD |
         (vfork_events_ ? PTRACE_O_TRACEVFORKDONE : 0) | (attached_ ? 0 : PTRACE_O_EXITKILL) |
         (exit_events ? PTRACE_O_TRACEEXIT : 0);
}

// Before each resume of the client's: the stopped thread's options follow
// the hook (recording may have started or stopped since). A new thread
// inherits its creator's options (handle_clone copies the flag).
void PtraceProcess::sync_exit_events(pid_t tid, ThreadState& thread) {
  const bool want = hook_ != nullptr && hook_->traces(tid) && hook_->holds_exit();
  if (want == thread.exit_events) return;
  if (do_ptrace(PTRACE_SETOPTIONS, tid, 0, reinterpret_cast<void*>(ptrace_options(want)))) thread.exit_events = want;
}

// PTRACE_EVENT_EXIT: a thread about to end, its registers and the
// process's memory still there. Every thread's exit comes through here
// (PTRACE_O_TRACEEXIT); all but the program's own end go on at once, even
// while stopping all (their exit status follows). The program's end is
// held when the tracer keeps the whole program's history (holds_exit):
// its leader calls exit_group, dies of a signal other than SIGKILL, or is
// the last thread to leave.
std::optional<ProcessEvent> PtraceProcess::handle_exit_event(pid_t tid, ThreadState& thread) {
  constexpr unsigned long long kExitGroup = 231;  // x86-64 __NR_exit_group
  bool hold = false;
  if (tid == pid_ && hook_ != nullptr && hook_->traces(tid) && hook_->holds_exit()) {
    unsigned long status = 0;
    user_regs_struct regs{};
    const int signal =
        do_ptrace(PTRACE_GETEVENTMSG, tid, 0, &status).ok() ? static_cast<int>(status & 0x7f) : SIGKILL;
    const bool group = do_ptrace(PTRACE_GETREGS, tid, 0, &regs).ok() && regs.orig_rax == kExitGroup;
    bool last = true;
    for (const auto& [other, state] : threads_) {
      if (other != tid && !state.exited) last = false;
    }
    // A SIGKILL is somebody ending the program for good (and the kernel
    // holds such a thread here only sometimes): it ends as without history.
    hold = signal == 0 ? (group || last) : signal != SIGKILL;
  }
  if (!hold) {
    thread.running = do_ptrace(PTRACE_CONT, tid, 0, nullptr).ok();
    return std::nullopt;
  }
  thread.stepping = false;
  ending_ = true;
  ProcessEvent event;
  event.tid = tid;
  event.signal = SIGKILL;
  event.exit_held = true;
  return event;
}

}  // namespace stub::process
