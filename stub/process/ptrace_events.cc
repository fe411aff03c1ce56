// Resuming threads and turning wait statuses into events, all-stop: when an
// event is to be reported, every other running thread gets a SIGSTOP; what
// such a thread had to say meanwhile is kept as its pending event and
// reported on a later resume instead of running it (ptrace_process.h).
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {
namespace {

// How long a non-blocking poll_event may absorb the tracer's stops before
// the event loop gets a turn (the client's packets, Ctrl-C, disconnect).
constexpr std::chrono::milliseconds kAbsorbingTurn{20};

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;


// A pending trap no longer means anything once gdb moved the thread, removed
// the breakpoint, or continues a thread whose step had already finished.
// A SIGTRAP with none of those reasons was sent (kill, tgkill) or raised by
// the program's own int3: it is the program's, wherever the pc went
// (gdbserver discards only breakpoint stops).
bool pending_is_stale(const ProcessEvent& event, uint64_t kept_pc, uint64_t pc, bool breakpoint_present,
                      StepKind next) {
  if (event.kind != ProcessEvent::Kind::Stopped || event.signal != SIGTRAP) return false;
  if (event.fork_child != 0 || event.vfork_done) return false;  // a child is held on it
  if (!event.software_breakpoint && !event.single_stepped && !event.hw_stop && !event.exec_path) return false;
  if (pc != kept_pc) return true;
  if (event.software_breakpoint && !breakpoint_present) return true;
  return event.single_stepped && !event.hw_stop && next == StepKind::Continue;
}

}  // namespace

Expected<void> PtraceProcess::resume(pid_t tid, StepKind kind, int signal) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  auto found = threads_.find(tid);
  if (found == threads_.end()) {
    return make_error(ErrorCode::NoProcess, "No thread " + std::to_string(tid));
  }
  ThreadState& thread = found->second;
  if (thread.exited) return make_error(ErrorCode::InvalidArgument, "Thread " + std::to_string(tid) + " has exited");
  if (thread.running || thread.deferred) return {};
  // In non-stop mode another thread's kept event is that thread's business.
  bool any_pending = non_stop_ ? thread.pending.has_value()
                               : std::any_of(threads_.begin(), threads_.end(),
                                             [](const auto& entry) { return entry.second.pending.has_value(); });
  if (any_pending || held_for_vfork(tid)) {
    // Decided in next_event: a pending event is reported without running
    // anybody, or every deferred thread starts. A thread held while a vfork
    // child shares the memory starts at the vforkdone (ptrace_fork.cc).
    thread.deferred = kind;
    thread.deferred_signal = signal;
    return {};
  }
  return start_thread(tid, thread, kind, signal);
}

// The client's (or our own logical) resume: the tracer's say, stepping off
// a breakpoint under the thread, debug registers, then ptrace.
Expected<void> PtraceProcess::start_thread(pid_t tid, ThreadState& thread, StepKind kind, int signal) {
  if (ending_) {
    // Any resume lets a program held at its end go (the signal the client
    // passes on, gdb's SIGKILL, means nothing to it now): no tracer, no
    // step, its exit comes next.
    if (auto r = do_ptrace(PTRACE_CONT, tid, 0, nullptr); !r) return r.error();
    thread.running = true;
    thread.requested = kind;
    return {};
  }
  if (thread.drops_injected_signal) {
    // As the kernel would at this stop (gdbserver's answer: the signal is
    // never delivered), before anything here resumes the thread.
    signal = 0;
    thread.drops_injected_signal = false;
  }
  if (thread.owed_signal != 0) {
    if (signal != 0) {
      requeue_signal(tid, thread.owed_signal);
      thread.owed_signal = 0;
      thread.owed_siginfo.clear();
    } else {
      signal = take_owed_signal(tid, thread);
    }
  }
  StepKind actual = kind;
  sync_exit_events(tid, thread);
  auto stopped_pc = read_pc(tid);
  if (!stopped_pc) return stopped_pc.error();
  if (hook_ != nullptr && hook_->traces(tid)) {
    actual = hook_->before_resume(*this, tid, kind, signal);
    if (kind == StepKind::SingleStep) actual = StepKind::SingleStep;
  }
  auto pc = read_pc(tid);
  if (!pc) return pc.error();
  if (*pc != *stopped_pc) thread.pc_moved_unrun = true;
  auto bp = breakpoints_.find(*pc);
  // A breakpoint under the pc is stepped off (the thread hit it, or a step
  // ahead runs what gdb's step over it will ask). One the thread stands on
  // since a signal stopped it there is still to be hit, as under
  // gdbserver: gdb's step over it was interrupted, and gdb continues with
  // the signal to hit its step-resume breakpoint there (a step off lost a
  // hit of the user's). So is one the tracer's emulation moved it onto.
  // A traced thread's resume with the signal is a step (the tracer sees
  // where the signal takes it): that step runs the int3, and its trap is
  // the breakpoint's hit (handle_sigtrap).
  const bool signal_here = thread.signal_stop_pc == *pc;
  bool step_off = bp != breakpoints_.end() && !thread.pc_moved_unrun && !signal_here;
  if (bp != breakpoints_.end() && !step_off) thread.into_breakpoint = *pc;
  // Under one of the tracer's int3s too, the step runs in raw_resume with
  // every other thread held (step_held), never with a plain lift.
  bool under_trace_int3 = trace_int3s_.count(*pc) != 0;
  bool lift = step_off && !thread.reinsert_at && !under_trace_int3;
  if (step_off && under_trace_int3) actual = StepKind::SingleStep;
  // With the int3 lifted until the step's event is reaped, the threads
  // started beside this one could pass the breakpoint unseen (a client
  // that resumes threads standing on breakpoints it left inserted lost
  // their hits: test_breakpoint_resume). The step is made with them held
  // instead, unless it may block.
  const bool held_step = lift && threads_.size() > 1 && !step_may_block(*pc, bp->second);
  if (held_step) {
    lift = false;
    actual = StepKind::SingleStep;
  }
  if (lift) {
    // Step the original instruction with the int3 lifted; the breakpoint
    // goes back when that step's event is reaped (handle_status), and for a
    // continue the step's trap is swallowed there and the thread continued.
    if (auto r = raw_write(*pc, {bp->second}); !r) return r;
    thread.reinsert_at = *pc;
  }
  if (auto r = sync_debug_regs(tid, thread); !r) {
    if (lift) {
      (void)raw_write(*pc, {kInt3});
      thread.reinsert_at.reset();
    }
    return r;
  }
  auto r = raw_resume(tid, thread, lift ? StepKind::SingleStep : actual, signal, held_step);
  if (!r) {
    if (lift) {
      (void)raw_write(*pc, {kInt3});
      thread.reinsert_at.reset();
    }
    return r;
  }
  thread.requested = kind;
  return {};
}

Expected<void> PtraceProcess::raw_resume(pid_t tid, ThreadState& thread, StepKind kind, int signal, bool held_step) {
  keep_trap_handler(tid, thread, signal);
  bool step = kind == StepKind::SingleStep;
  if (held_step) {
    auto pc = read_pc(tid);
    if (!pc) return pc.error();
    return step_held(tid, thread, *pc, signal);
  }
  if (step && !trace_int3s_.empty()) {
    // Stepping an int3 would run the int3: the real instruction is stepped
    // with the tracer's int3 lifted instead. Not under a user's breakpoint
    // still to be hit (start_thread): its int3 is to run.
    auto pc = read_pc(tid);
    if (pc && trace_int3s_.count(*pc) != 0 && thread.reinsert_at != *pc && thread.into_breakpoint != *pc) {
      return step_held(tid, thread, *pc, signal);
    }
  }
  // Catching system calls (QCatchSyscalls): a continue of a thread the
  // tracer does not step stops at each call's entry and return.
  const bool catching = !step && caught_syscalls_ && !(hook_ != nullptr && hook_->traces(tid));
  auto r = do_ptrace(step ? PTRACE_SINGLESTEP : catching ? PTRACE_SYSCALL : PTRACE_CONT, tid, 0, signal_arg(signal));
  // Failed where the thread is in no stop because its next status is in
  // hand already (its end, reaped while btstub ran a system call in it:
  // fork_copy): it counts as run, and the event loop reports that status.
  if (!r && !in_replay(tid)) return r.error();
  thread.running = true;
  thread.unrun_at_resume = thread.pc_moved_unrun;
  thread.pc_moved_unrun = false;
  thread.stepping = step;
  thread.last_kind = kind;
  return {};
}

std::optional<ProcessEvent> PtraceProcess::poll_event() {
  auto event = next_event(false);
  if (!event) return std::nullopt;
  return *event;
}

Expected<ProcessEvent> PtraceProcess::wait_event() {
  auto event = next_event(true);
  if (!event) return event.error();
  if (!*event) return make_error(ErrorCode::Internal, "waitpid returned no event");
  return **event;
}

Expected<std::optional<ProcessEvent>> PtraceProcess::next_event(bool block) {
  // The program's end, reaped while all threads were being stopped:
  // reported before anything else.
  auto take_ended = [this]() -> std::optional<ProcessEvent> {
    std::optional<ProcessEvent> event = std::move(ended_while_stopping_);
    ended_while_stopping_.reset();
    return event;
  };
  if (auto ended = take_ended()) return ended;
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  if (auto event = take_pending()) return event;
  commit_deferred();
  // A recorded program stops every few branches, and most stops are the
  // tracer's own, absorbed below: unbounded, a non-blocking poll ran as long
  // as the program did, and the client's Ctrl-C or disconnect waited for
  // its next reportable stop (seconds; a client that came meanwhile got the
  // replies of the one before). The poll gives the event loop a turn every
  // kAbsorbingTurn; the stops it leaves raise SIGCHLD, which brings it back.
  const auto turn_ends = std::chrono::steady_clock::now() + kAbsorbingTurn;
  uint32_t absorbed = 0;
  for (;;) {
    if (auto ended = take_ended()) return ended;
    if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
    // A specific pid keeps us from reaping children that are not ours;
    // with several threads any tracee may report, so wait for any.
    pid_t target = threads_.size() == 1 ? threads_.begin()->first : -1;
    int status = 0;
    pid_t tid = 0;
    if (since_look_ >= kFairnessEvery) {
      since_look_ = 0;
      tid = reap_other(last_served_, &status);
    }
    if (tid == 0) {
      tid = reap(target, &status, __WALL | (block ? 0 : WNOHANG));
      if (tid > 0) ++since_look_;
    }
    if (tid == 0) return std::optional<ProcessEvent>{};
    if (tid < 0) {
      int err = errno;
      mark_gone();
      return make_error(ErrorCode::NoProcess, std::string("waitpid: ") + std::strerror(err));
    }
    last_served_ = tid;
    auto event = handle_status(tid, status);
    if (auto ended = take_ended()) return ended;  // the stop's handling found the program gone
    if (!event && recheck_pending_) {
      // Threads held for a vfork start now, or report what they had.
      recheck_pending_ = false;
      if (auto pending = take_pending()) return pending;
      commit_deferred();
    }
    if (!event) {
      // Absorbed, so usually a thread was just resumed (the tracer's next
      // block). btstub runs on the program's CPU by default: yielding lets
      // that thread run to its next stop now, which the next reap then
      // finds, instead of a round through the event loop (epoll, signalfd
      // read, re-arm) per stop. Costs nothing when nobody else is runnable.
      if (!block) {
        if (++absorbed % 64 == 0 && std::chrono::steady_clock::now() >= turn_ends) {
          return std::optional<ProcessEvent>{};
        }
        ::sched_yield();
      }
      continue;
    }
    if (non_stop_) {
      // The thread's own event answers a vCont;t as well as its SIGSTOP would.
      if (auto found = threads_.find(event->tid); found != threads_.end()) found->second.stop_requested = false;
    } else if (event->kind == ProcessEvent::Kind::Stopped || event->kind == ProcessEvent::Kind::ThreadExited) {
      stop_all_threads(event->tid);
    }
    last_reported_ = event->tid;
    return event;
  }
}

// The first of up to kFairnessLook threads but `served` (the last one
// served), in tid order round from the one after where the last look
// ended, whose status is ready, taken as waitpid(-1) would have returned
// it; 0 if none is. Bounded, so that a program of hundreds of threads
// pays a few waitpids a look, and every thread is reached in turn.
pid_t PtraceProcess::reap_other(pid_t served, int* status) {
  if (threads_.size() < 2) return 0;
  std::size_t looked = 0;
  for (pid_t other : threads_in_turn_after(looked_last_)) {
    if (looked == kFairnessLook) break;
    looked_last_ = other;
    if (other == served || threads_.at(other).exited) continue;
    ++looked;
    if (reap(other, status, __WALL | WNOHANG) == other) return other;
  }
  return 0;
}

// Every thread, in tid order from the one after `last` round to `last`
// itself: no thread starves when each look starts after the last served.
std::vector<pid_t> PtraceProcess::threads_in_turn_after(pid_t last) const {
  std::vector<pid_t> order;
  for (auto it = threads_.upper_bound(last); it != threads_.end(); ++it) order.push_back(it->first);
  for (auto it = threads_.begin(); it != threads_.end() && it->first <= last; ++it) order.push_back(it->first);
  return order;
}

// Whether the event `thread` keeps means nothing any more (pending_is_stale)
// now that it is to go on with `next`; also when its pc cannot be read.
bool PtraceProcess::kept_event_stale(pid_t tid, const ThreadState& thread, StepKind next) {
  auto pc = read_pc(tid);
  return !pc || pending_is_stale(*thread.pending, thread.pending_pc, *pc,
                                 breakpoints_.count(*pc) != 0 || client_int3s_.count(*pc) != 0, next);
}

// The first valid pending event of a thread the client resumed, taking
// threads in turn after the last one reported so no thread starves. A kept
// signal the client passes (QPassSignals) is no event: it goes with its
// thread when the deferred threads start, and stays pending when another
// event is reported instead, so the program never loses it.
std::optional<ProcessEvent> PtraceProcess::take_pending() {
  if (non_stop_) return take_pending_non_stop();
  std::vector<pid_t> passed;
  for (pid_t tid : threads_in_turn_after(last_reported_)) {
    ThreadState& thread = threads_[tid];
    if (!thread.pending || !thread.deferred) continue;
    ProcessEvent event = *thread.pending;
    if (kept_event_stale(tid, thread, *thread.deferred)) {
      thread.pending.reset();
      continue;
    }
    if (event.signal != SIGTRAP && *thread.deferred == StepKind::SingleStep) {
      event.during_step = true;  // the client's step meets it (classify_stop)
    } else if (event.signal != SIGTRAP && pass_signals_.count(event.signal) != 0) {
      passed.push_back(tid);
      continue;
    }
    restore_kept_siginfo(tid, thread);
    thread.pending.reset();
    for (auto& [other, state] : threads_) {
      // A signal the client gave with its resume is not lost to the
      // event reported instead: the thread has it on its next resume.
      if (state.deferred && state.deferred_signal != 0) {
        if (other != tid) {
          owe_signal(other, state, state.deferred_signal);
        } else {
          requeue_signal(other, state.deferred_signal);
        }
      }
      state.deferred.reset();
      state.deferred_signal = 0;
    }
    stop_all_threads(tid);  // normally nobody runs; threads left running (no action) do
    last_reported_ = tid;
    return event;
  }
  for (pid_t tid : passed) {
    ThreadState& thread = threads_[tid];
    if (thread.deferred_signal != 0) requeue_signal(tid, thread.deferred_signal);
    restore_kept_siginfo(tid, thread);
    thread.deferred_signal = thread.pending->signal;  // delivered when it starts
    thread.pending.reset();
  }
  return std::nullopt;
}

// Non-stop: a thread resumed while it had an event kept reports that
// event instead of running; nobody else is stopped or held for it.
std::optional<ProcessEvent> PtraceProcess::take_pending_non_stop() {
  for (auto& [tid, thread] : threads_) {
    if (!thread.pending || !thread.deferred) continue;
    const bool stale = kept_event_stale(tid, thread, *thread.deferred);
    std::optional<ProcessEvent> event = std::move(thread.pending);
    thread.pending.reset();
    if (stale) continue;  // commit_deferred starts it
    restore_kept_siginfo(tid, thread);
    if (thread.deferred_signal != 0) requeue_signal(tid, thread.deferred_signal);
    thread.deferred.reset();
    thread.deferred_signal = 0;
    thread.stop_requested = false;
    last_reported_ = tid;
    return event;
  }
  return std::nullopt;
}

// The thread stands in the kept signal's delivery stop again: what the
// client reads as $_siginfo, and what the kernel delivers, is that
// signal's own siginfo.
void PtraceProcess::restore_kept_siginfo(pid_t tid, ThreadState& thread) {
  if (thread.pending_siginfo.empty()) return;
  (void)write_siginfo(tid, thread.pending_siginfo);
  thread.pending_siginfo.clear();
}

// The kernel queues it for the thread as if sent now (gdbserver keeps such
// signals in a list of its own for the same purpose).
void PtraceProcess::requeue_signal(pid_t tid, int signal) {
  (void)::syscall(SYS_tgkill, pid_, tid, signal);
}

// A signal the client gave a thread that another thread's event kept from
// starting: delivered when the thread next starts, with the siginfo of the
// stop it still stands in when that stop was this signal's (gdbserver keeps
// such signals with their siginfo too). Queued with tgkill it would come
// again as a new stop, sent by btstub. A second one does wait in the queue.
// The owed signal, its siginfo written back so the kernel delivers it as
// it came; the thread owes nothing after.
int PtraceProcess::take_owed_signal(pid_t tid, ThreadState& thread) {
  const int signal = thread.owed_signal;
  if (!thread.owed_siginfo.empty()) (void)write_siginfo(tid, thread.owed_siginfo);
  thread.owed_signal = 0;
  thread.owed_siginfo.clear();
  return signal;
}

// A breakpoint lifted for this thread's step goes back in, unless the
// client removed it meanwhile.
void PtraceProcess::put_back_lifted_breakpoint(ThreadState& thread) {
  if (!thread.reinsert_at) return;
  if (breakpoints_.count(*thread.reinsert_at) != 0) (void)raw_write(*thread.reinsert_at, {kInt3});
  thread.reinsert_at.reset();
}

void PtraceProcess::owe_signal(pid_t tid, ThreadState& thread, int signal) {
  if (thread.owed_signal != 0) {
    requeue_signal(tid, signal);
    return;
  }
  thread.owed_signal = signal;
  thread.owed_siginfo.clear();
  if (signal == thread.last_signal) {
    if (auto info = read_siginfo(tid)) thread.owed_siginfo = std::move(*info);
  }
}

void PtraceProcess::commit_deferred() {
  for (auto& [tid, thread] : threads_) {
    if (!thread.deferred || held_for_vfork(tid)) continue;
    StepKind kind = *thread.deferred;
    thread.deferred.reset();
    (void)start_thread(tid, thread, kind, thread.deferred_signal);
    thread.deferred_signal = 0;
  }
}

std::optional<ProcessEvent> PtraceProcess::handle_status(pid_t tid, int status) {
  auto found = threads_.find(tid);
  if (found == threads_.end()) {
    // A new thread (or fork child) reporting before its clone (fork) event.
    WaitRoutes::instance().keep_unclaimed(tid, status);
    return std::nullopt;
  }
  ThreadState& thread = found->second;
  thread.running = false;
  thread.signal_stop_pc.reset();  // set again below if this stop is a signal's
  thread.into_breakpoint.reset();
  // Also when this thread died: other threads may still run there.
  put_back_lifted_breakpoint(thread);
  if (WIFEXITED(status) || WIFSIGNALED(status)) return thread_gone(tid, status);
  if (!WIFSTOPPED(status)) return std::nullopt;
  int ptrace_event = status >> 16;
  if (ptrace_event == PTRACE_EVENT_CLONE) {
    handle_clone(tid);
    return std::nullopt;
  }
  if (ptrace_event == PTRACE_EVENT_FORK || ptrace_event == PTRACE_EVENT_VFORK) {
    return handle_fork(tid, ptrace_event == PTRACE_EVENT_VFORK);
  }
  if (ptrace_event == PTRACE_EVENT_VFORK_DONE) return handle_vfork_done(tid, thread);
  if (ptrace_event == PTRACE_EVENT_EXEC) {
    handle_exec();
    if (hook_ != nullptr) hook_->on_exec(pid_);
    ProcessEvent event;
    event.tid = pid_;
    event.signal = SIGTRAP;
    if (auto path = exec_file()) event.exec_path = *path;
    return event;
  }
  if (ptrace_event == PTRACE_EVENT_EXIT) return handle_exit_event(tid, thread);
  if (ptrace_event != 0) {  // an event we did not ask for: keep going
    if (!stopping_all_) (void)raw_resume(tid, thread, thread.last_kind, 0);
    return std::nullopt;
  }
  int signal = WSTOPSIG(status);
  if (signal == (SIGTRAP | 0x80)) return syscall_stop(tid, thread);  // PTRACE_O_TRACESYSGOOD
  if (signal == SIGSTOP && thread.sigstop_expected) {
    // Our all-stop SIGSTOP, or that of a thread that had another event first.
    thread.sigstop_expected = false;
    // One queued behind that event stops the thread before it runs
    // anything: where the tracer had moved it (onto a user breakpoint's
    // address, out of its code cache) is still unrun, and the restart
    // below or the next resume must run into that breakpoint, not step
    // off it (its hit was lost: several threads under --record).
    if (thread.unrun_at_resume) thread.pc_moved_unrun = true;
    if (thread.stop_requested && !stopping_all_) {
      // Non-stop: the client's vCont;t, answered as gdbserver does (T00).
      thread.stop_requested = false;
      thread.stepping = false;
      if (hook_ != nullptr && hook_->traces(tid)) hook_->on_held(*this, tid);  // stopped where it was, as in all-stop
      ProcessEvent stopped;
      stopped.tid = tid;
      return stopped;
    }
    if (!stopping_all_) {
      (void)start_thread(tid, thread, thread.requested, 0);
    } else if (hook_ != nullptr && hook_->traces(tid)) {
      hook_->on_held(*this, tid);
    }
    return std::nullopt;
  }
  thread.last_signal = signal;
  auto event = classify_stop(tid, thread, signal);
  // A thread killed from outside (SIGKILL) leaves its stop at once: had the
  // stop been reported, the client's next register read would fail. Its exit
  // status follows, and reports the death instead.
  if (event && !still_in_stop(tid)) return std::nullopt;
  return event;
}

std::optional<ProcessEvent> PtraceProcess::thread_gone(pid_t tid, int status) {
  if (hook_ != nullptr && hook_->traces(tid)) hook_->on_thread_exited(tid);
  release_trace_int3(tid);
  ProcessEvent event;
  event.tid = tid;
  if (tid != pid_) {
    threads_.erase(tid);
    if (stopping_all_) return std::nullopt;
    if (!thread_events_) return no_resumed_left(tid);
    event.kind = ProcessEvent::Kind::ThreadExited;
    event.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    return event;
  }
  event.kind = WIFEXITED(status) ? ProcessEvent::Kind::Exited : ProcessEvent::Kind::Killed;
  event.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  event.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  mark_gone();
  return event;
}

// After `gone` exited: when no thread the client resumed is left (gdb's
// scheduler-locking resumed that one alone), nothing would ever answer the
// resume, and gdbserver reports "no resumed" (`N`) instead. Not when the
// thread took the process with it (exit_group): the others have then left
// their stops, killed, and the process's exit follows.
std::optional<ProcessEvent> PtraceProcess::no_resumed_left(pid_t gone) {
  if (has_running_threads()) return std::nullopt;
  bool any_stopped = false;
  for (const auto& [tid, thread] : threads_) {
    if (thread.exited) continue;
    if (!still_in_stop(tid)) return std::nullopt;
    any_stopped = true;
  }
  if (!any_stopped) return std::nullopt;
  ProcessEvent event;
  event.kind = ProcessEvent::Kind::NoResumed;
  event.tid = gone;
  return event;
}

std::optional<ProcessEvent> PtraceProcess::syscall_stop(pid_t tid, ThreadState& thread) {
  // The kernel says whether this is the call's entry or its return: a
  // count of stops does not (a vfork's return comes after the parent was
  // held and resumed otherwise, an execve's after the exec event rebuilt
  // the thread).
  struct __ptrace_syscall_info info{};
  const bool have_info = do_ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof info, &info).ok() &&
                         (info.op == PTRACE_SYSCALL_INFO_ENTRY || info.op == PTRACE_SYSCALL_INFO_EXIT);
  const bool entry = info.op == PTRACE_SYSCALL_INFO_ENTRY;
  user_regs_struct regs{};
  const bool have_regs = do_ptrace(PTRACE_GETREGS, tid, 0, &regs).ok();
  const int number = static_cast<int>(regs.orig_rax);
  if (have_info && have_regs && caught_syscalls_ &&
      (caught_syscalls_->empty() || caught_syscalls_->count(number) != 0)) {
    ProcessEvent event;
    event.tid = tid;
    event.signal = SIGTRAP;
    event.syscall = entry ? ProcessEvent::SyscallStop::Entry : ProcessEvent::SyscallStop::Return;
    event.syscall_number = number;
    return event;
  }
  if (!stopping_all_) (void)raw_resume(tid, thread, thread.last_kind, 0);
  return std::nullopt;
}

// What a signal stop means, after the tracer had its say; nullopt when the
// stop was absorbed and the thread goes on (or, while stopping all, stays).
std::optional<ProcessEvent> PtraceProcess::classify_stop(pid_t tid, ThreadState& thread, int signal) {
  ProcessEvent event;
  event.tid = tid;
  event.signal = signal;
  thread.drops_injected_signal = false;

  bool trace_hit = false;
  if (signal == SIGTRAP) {
    event = handle_sigtrap(tid, thread, trace_hit);
    if (thread.hit_retired_int3) {
      // Stale: gdbserver discards such a stop. The original instruction
      // is back under the rewound pc; the thread runs on as it ran.
      thread.hit_retired_int3 = false;
      if (!stopping_all_ && !(hook_ != nullptr && hook_->traces(tid)) &&
          raw_resume(tid, thread, thread.last_kind, 0)) {
        return std::nullopt;
      }
    }
  } else {
    thread.stepping = false;
  }
  bool traced = hook_ != nullptr && hook_->traces(tid);
  if (!traced && trace_hit && signal == SIGTRAP && !event.software_breakpoint && !event.hw_stop &&
      !event.single_stepped && !thread.trace_stop) {
    // A tracer int3 (debug-register hits carry thread.trace_stop).
    auto pc = read_pc(tid);
    if (pc && pass_untraced_trace_hit(tid, thread, *pc)) return std::nullopt;
  }
  if (traced) {
    const TracedStop stop = traced_stop(tid, event, trace_hit);
    TraceVerdict verdict = hook_->on_stop(*this, stop);
    if (verdict == TraceVerdict::StopHere) {
      ProcessEvent here;
      here.tid = tid;
      return here;
    }
    if (verdict == TraceVerdict::ShowStop) {
      // Not run on as a step the client did not ask for (below): shown
      // as the trap the tracer's trace stops are.
      if (thread.requested == StepKind::Continue) event.single_stepped = false;
      return event;
    }
    if (verdict != TraceVerdict::Report) {
      // Moved by an emulated transfer (or out of the code cache): unrun
      // there, kept stopped (all-stop) or resumed. Resumed, our all-stop
      // SIGSTOP may still stop it before it runs anything (unrun_at_resume;
      // a hit of a user breakpoint there was lost to a step off it,
      // test_thread_marks): see start_thread.
      if (auto pc = read_pc(tid); pc && *pc != stop.pc) thread.pc_moved_unrun = true;
      StepKind kind = verdict == TraceVerdict::SingleStep ? StepKind::SingleStep : StepKind::Continue;
      if (!stopping_all_) (void)raw_resume(tid, thread, kind, 0);
      return std::nullopt;
    }
  }
  if (thread.ignored_trap) {
    // Sent while the program ignores SIGTRAP (ptrace_trap_guard.cc): after
    // the tracer's say (it may have stepped a system call the signal came
    // with), the thread goes on as the client had it go, without it.
    thread.ignored_trap = false;
    if (stopping_all_) return std::nullopt;
    if (start_thread(tid, thread, thread.requested, 0)) return std::nullopt;
  }
  if (signal != SIGTRAP) {
    // Read after the tracer's say: it may have moved the thread (out of
    // its code cache) to where the client sees it stop.
    if (auto pc = read_pc(tid)) thread.signal_stop_pc = *pc;
  }
  if (stopping_all_) return event;
  bool bare_step = event.single_stepped && !event.hw_stop && !event.software_breakpoint;
  bool bare_trace_stop = trace_hit && !event.single_stepped && !event.hw_stop && !event.software_breakpoint;
  // A step the client did not ask for (stepping off a breakpoint, or one
  // the tracer chose), or a trace stop of a tracer that is gone: go on.
  if (bare_step && thread.requested == StepKind::Continue) {
    // A continue run as steps still stops at the breakpoints it reaches.
    auto pc = read_pc(tid);
    if (pc && breakpoints_.count(*pc) != 0) {
      event.single_stepped = false;
      event.software_breakpoint = true;
      return event;
    }
  }
  if ((bare_step && thread.requested == StepKind::Continue) || (bare_trace_stop && !traced)) {
    if (start_thread(tid, thread, thread.requested, 0)) return std::nullopt;
  }
  if (signal != SIGTRAP && thread.requested == StepKind::SingleStep) {
    event.during_step = true;
  } else if (signal != SIGTRAP && pass_signals_.count(signal) != 0) {
    // QPassSignals: delivered at once, the other threads never stop.
    if (start_thread(tid, thread, thread.requested, signal)) return std::nullopt;
  }
  return event;
}

bool PtraceProcess::still_in_stop(pid_t tid) {
  siginfo_t info{};
  auto r = do_ptrace(PTRACE_GETSIGINFO, tid, 0, &info);
  // While the program's end may be held (PTRACE_O_TRACEEXIT), a thread
  // killed out of its stop stops once more, on its way out: that is a new
  // stop, whose status follows.
  if (r.ok()) return info.si_code != (SIGTRAP | (PTRACE_EVENT_EXIT << 8));
  return r.error().code != ErrorCode::NoProcess;
}

ProcessEvent PtraceProcess::handle_sigtrap(pid_t tid, ThreadState& thread, bool& trace_hit) {
  thread.ignored_trap = false;
  ProcessEvent event;
  event.tid = tid;
  event.signal = SIGTRAP;
  // Read once for the stop (do_ptrace caches them until the thread runs).
  user_regs_struct gregs{};
  const bool have_regs = do_ptrace(PTRACE_GETREGS, tid, 0, &gregs).ok();
  if (have_regs) note_trap_calls(thread, gregs);
  const uint64_t int3_at = gregs.rip - 1;
  // Back onto the int3 just run; deferred, as the tracer usually moves rip
  // again at once.
  auto rewind = [&] {
    gregs.rip = int3_at;
    defer_set_registers(tid, gregs);
  };
  if (have_regs && !thread.stepping && thread.written.dr7 == 0 && trace_int3s_.count(int3_at) != 0 &&
      breakpoints_.count(int3_at) == 0 && client_int3s_.count(int3_at) == 0) {
    // Most stops of a traced program are the tracer's int3s. A thread that
    // was not stepping, with no debug register armed, found just past one
    // executed it (a SIGTRAP sent meanwhile merges with that trap), so the
    // siginfo is not worth a system call.
    rewind();
    trace_hit = true;
    return event;
  }
  siginfo_t info{};
  int code = do_ptrace(PTRACE_GETSIGINFO, tid, 0, &info) ? info.si_code : 0;
  // si_code <= 0: SIGTRAP sent by kill/tkill/sigqueue, not by the CPU.
  bool from_kernel = code > 0;
  thread.ignored_trap = !from_kernel && trap_ignored_;
  // ptrace_notify(SIGTRAP), the stop after a step into a signal handler.
  thread.drops_injected_signal = code == SIGTRAP;
  bool was_stepping = thread.stepping;
  thread.stepping = false;

  uint64_t dr6 = from_kernel ? take_dr6(tid, thread) : 0;
  const bool debug_trap = code == TRAP_BRKPT || code == TRAP_HWBKPT;
  if (!was_stepping && have_regs && debug_trap && (dr6 & 0xf) == 0 && thread.written.dr7 != 0) {
    // A #DB whose DR6 came with no reason: the kernel takes it for an
    // int1 (icebp), sends TRAP_BRKPT and leaves the virtual DR6 empty. On
    // some VMs an execution breakpoint's hit arrives so now and then (its
    // B0-B3 bit lost, more often under load): the thread stands on an
    // armed execute address, with no int1 before it. Taken for that hit,
    // with RF set as the kernel sets it for one (hw_breakpoint_handler).
    // So is TRAP_HWBKPT with an empty virtual DR6: the CPU's DR6 named a
    // slot whose breakpoint the kernel did not count as hit.
    dr6 |= execute_hits_at(thread.written.dr7, thread.written.address, gregs.rip);
    if ((dr6 & 0xf) != 0) {
      std::vector<uint8_t> before = raw_read(gregs.rip - 1, 1);
      if (!before.empty() && before[0] == 0xf1) {
        dr6 &= ~uint64_t{0xf};
      } else {
        constexpr uint64_t kResumeFlag = uint64_t{1} << 16;  // eflags.RF
        gregs.eflags |= kResumeFlag;
        defer_set_registers(tid, gregs);
      }
    }
  }
  trace_hit = thread.trace_stop.has_value() && (dr6 & (uint64_t{1} << 3)) != 0;
  // Slot 3 is a debug-register tracer's own; otherwise Z1-Z4 may use it.
  const bool tracer_slot = thread.trace_stop || (hook_ != nullptr && hook_->uses_debug_register());
  uint64_t user_bits = tracer_slot ? (dr6 & ~uint64_t{1 << 3}) : dr6;
  auto hits = user_debug_.hits_for_dr6(user_bits);
  if (!hits.empty()) {
    // One stop names one address. Several watchpoints hit by one
    // instruction (a wide store over two of them): the highest slot's, as
    // gdbserver names it (x86_dr_stopped_data_address). gdb stops for a
    // write watchpoint only where its value changed, so which one is named
    // decides what gdb sees; the lowest slot's, named before, was the
    // unchanged one in a memset over two watched bytes, and gdb went on
    // past the change. An execute hit only where no watchpoint was hit.
    const auto watch = std::find_if(hits.rbegin(), hits.rend(),
                                    [](const DebugHit& h) { return h.kind != WatchKind::Execute; });
    const DebugHit& hit = watch != hits.rend() ? *watch : hits.front();
    switch (hit.kind) {
      case WatchKind::Execute: event.hw_stop = protocol::BreakpointType::Hardware; break;
      case WatchKind::Write: event.hw_stop = protocol::BreakpointType::WriteWatch; break;
      case WatchKind::Read: event.hw_stop = protocol::BreakpointType::ReadWatch; break;
      case WatchKind::Access: event.hw_stop = protocol::BreakpointType::AccessWatch; break;
    }
    event.hw_address = hit.kind == WatchKind::Execute ? 0 : hit.address;
  }
  if (auto bp = breakpoints_.find(int3_at);
      was_stepping && have_regs && code == SI_KERNEL && bp != breakpoints_.end() && bp->second != kInt3) {
    // The step ran a user's int3 (one still to be hit under the pc,
    // start_thread; not the program's own int3 under a breakpoint lifted
    // to step off it): its hit, as a continue would have had it.
    rewind();
    event.software_breakpoint = true;
    trace_hit = trace_int3s_.count(int3_at) != 0;
    return event;
  }
  if (was_stepping && have_regs && code == SI_KERNEL && trace_int3s_.count(int3_at) == 0 && !was_trace_int3(int3_at) &&
      client_int3s_.count(int3_at) == 0) {
    // The step ran the program's own int3 (or int $3): its SIGTRAP, as a
    // continue would have had it, not a step done. (Taken for the step, it
    // vanished under --record, whose tracers step such code: the program's
    // handler never ran, gdb never stopped.)
    return event;
  }
  if (was_stepping && from_kernel) {
    // A step reports TRAP_TRACE, or TRAP_BRKPT after a syscall instruction.
    event.single_stepped = true;
    return event;
  }
  if (have_regs && from_kernel && (code == SI_KERNEL || code == TRAP_BRKPT)) {
    const bool user = breakpoints_.count(int3_at) != 0 || client_int3s_.count(int3_at) != 0;
    const bool trace = trace_int3s_.count(int3_at) != 0 || was_trace_int3(int3_at);
    // Non-stop: a breakpoint the client removed while this thread ran
    // into it (its trap was not reaped yet).
    const bool retired = !user && !trace && retired_user_int3s_.count(int3_at) != 0;
    if (user || trace || retired) {
      rewind();
      event.software_breakpoint = user;
      trace_hit = trace;
      thread.hit_retired_int3 = retired;
    }
  }
  if (from_kernel && debug_trap && thread.trace_stop && !trace_hit && !event.software_breakpoint && !event.hw_stop) {
    // A debug trap while the tracer's debug register is armed that is no
    // hit of it: reported to the client as a SIGTRAP. Said, so that a rare
    // one (seen under load on VMs) can be told apart.
    std::fprintf(stderr,
                 "btstub: thread %d: a debug trap at 0x%llx (si_code %d, DR6 0x%llx, DR7 0x%llx, the tracer's "
                 "stop at 0x%llx) is no trace stop: reported as SIGTRAP\n",
                 static_cast<int>(tid), static_cast<unsigned long long>(gregs.rip), code,
                 static_cast<unsigned long long>(dr6), static_cast<unsigned long long>(thread.written.dr7),
                 static_cast<unsigned long long>(*thread.trace_stop));
  }
  return event;
}

void PtraceProcess::handle_clone(pid_t parent) {
  unsigned long new_tid = 0;
  if (do_ptrace(PTRACE_GETEVENTMSG, parent, 0, &new_tid) && new_tid > 0) {
    pid_t tid = static_cast<pid_t>(new_tid);
    int status = first_status_of_new_tracee(tid);
    // The new thread starts with a SIGSTOP we do not pass on.
    if (WIFSTOPPED(status)) {
      ThreadState& state = threads_[tid];
      if (auto creator = threads_.find(parent); creator != threads_.end()) {
        state.exit_events = creator->second.exit_events;  // inherited with the options
      }
      if (hook_ != nullptr) hook_->on_thread_created(tid, parent);
      if (!stopping_all_) (void)start_thread(tid, state, StepKind::Continue, 0);
    }
  }
  resume_after_event_stop(parent);
}

// A clone or fork stop is ours alone: the parent goes on as it was going,
// unless a stop of all threads is under way (then our SIGSTOP is still
// queued behind the event stop and will arrive next).
void PtraceProcess::resume_after_event_stop(pid_t parent) {
  auto found = threads_.find(parent);
  if (found == threads_.end()) return;
  ThreadState& thread = found->second;
  if (stopping_all_) {
    thread.sigstop_expected = true;
    return;
  }
  StepKind kind = thread.last_kind;
  if (hook_ != nullptr && hook_->traces(parent)) {
    StepKind chosen = hook_->before_resume(*this, parent, kind, 0);
    if (chosen == StepKind::SingleStep) kind = chosen;
  }
  (void)raw_resume(parent, thread, kind, 0);
}

void PtraceProcess::handle_exec() {
  // The old address space, its breakpoints and all other threads are gone.
  for (auto& [tid, state] : threads_) {
    if (tid != pid_ && hook_ != nullptr && hook_->traces(tid)) hook_->on_thread_exited(tid);
  }
  threads_.clear();
  threads_[pid_] = ThreadState{};
  client_int3s_.clear();  // the old memory's
  retired_user_int3s_.clear();
  breakpoints_.edit().clear();
  trace_int3s_.edit().clear();
  retired_int3s_.clear();
  vfork_parent_ = 0;  // the vfork parent was another thread: gone with the old memory
  tracer_shared_.clear();
  tracer_mappings_.clear();  // gone with the old memory
  trap_handler_.reset();     // an exec sets handled signals to SIG_DFL (ignored ones stay)
  WaitRoutes::instance().forget_unclaimed_of(this);
  open_memory();
}

// --- All-stop ----------------------------------------------------------------

// A thread already owing us a SIGSTOP (one sent by an earlier all-stop that
// a pending event overtook) gets no second one: the first may already have
// been dequeued into a stop nobody reaped yet, and then a second would be a
// separate SIGSTOP, absorbed by nobody and reported to the client as the
// thread's own signal. Waiting for the owed one stops the thread all the same.
//
// A thread whose exit is already in hand (reaped early, while another
// thread's step was held, or by another debugged process) is
// gone from the kernel, and tgkill fails: it is waited for all the same,
// which takes that exit. Left out, it stayed listed at the stop, and the
// client's first register read of it failed (ESRCH).
void PtraceProcess::stop_all_threads(pid_t except) {
  while (auto handed = WaitRoutes::instance().take_handed(this, -1)) replay_.push_back(*handed);
  std::vector<pid_t> stopping;
  for (auto& [tid, thread] : threads_) {
    if (tid == except || !thread.running) continue;
    if (thread.sigstop_expected) {
      stopping.push_back(tid);
      continue;
    }
    if (::syscall(SYS_tgkill, pid_, tid, SIGSTOP) == 0) {
      thread.sigstop_expected = true;
      stopping.push_back(tid);
    } else if (in_replay(tid)) {
      stopping.push_back(tid);
    }
  }
  stopping_all_ = true;
  for (pid_t tid : stopping) {
    for (;;) {
      auto found = threads_.find(tid);
      if (!alive_ || found == threads_.end() || !found->second.running) break;
      int status = 0;
      pid_t reaped = wait_for_stop(tid, &status);
      if (reaped == 0) {
        leader_exited();
        break;
      }
      if (reaped != tid) {
        threads_.erase(tid);
        break;
      }
      keep_while_stopping(tid, status);
    }
  }
  stopping_all_ = false;
}

// Another debugged process reports an event: ours stop too, and what they
// had meanwhile stays pending. Nobody is left waiting to start either: the
// client sees every thread stopped and resumes them anew.
void PtraceProcess::stop_all() {
  if (!alive_) return;
  stop_all_threads(0);
  for (auto& [tid, thread] : threads_) {
    thread.deferred.reset();
    thread.deferred_signal = 0;
  }
}

void PtraceProcess::keep_pending(const ProcessEvent& event, const std::vector<uint8_t>& siginfo) {
  if (event.kind == ProcessEvent::Kind::Exited || event.kind == ProcessEvent::Kind::Killed) {
    ended_while_stopping_ = event;
    return;
  }
  auto found = threads_.find(event.tid);
  if (found == threads_.end()) return;
  auto pc = read_pc(event.tid);
  found->second.pending = event;
  found->second.pending_pc = pc ? *pc : 0;
  found->second.pending_siginfo = siginfo;
}

bool PtraceProcess::has_pending_event() const {
  if (ended_while_stopping_) return true;
  return std::any_of(threads_.begin(), threads_.end(), [](const auto& entry) { return entry.second.pending.has_value(); });
}

std::optional<ProcessEvent> PtraceProcess::take_pending_event(pid_t tid) {
  auto found = threads_.find(tid);
  if (found == threads_.end() || !found->second.pending || found->second.running) return std::nullopt;
  ThreadState& thread = found->second;
  const ProcessEvent& event = *thread.pending;
  if (event.kind != ProcessEvent::Kind::Stopped || event.fork_child != 0 || event.vfork_done || event.exec_path ||
      event.exit_held) {
    return std::nullopt;
  }
  const bool stale = kept_event_stale(tid, thread, StepKind::SingleStep);
  std::optional<ProcessEvent> told = std::move(thread.pending);
  thread.pending.reset();
  if (stale) {
    thread.pending_siginfo.clear();
    return std::nullopt;
  }
  restore_kept_siginfo(tid, thread);
  return told;
}

bool PtraceProcess::has_running_threads() const {
  return alive_ && std::any_of(threads_.begin(), threads_.end(), [](const auto& entry) {
           return entry.second.running || entry.second.deferred.has_value();
         });
}

// A status reaped while stopping all: our SIGSTOP (done), a clone (the new
// thread stays stopped too), or a real event kept for later.
void PtraceProcess::keep_while_stopping(pid_t tid, int status) {
  auto event = handle_status(tid, status);
  if (!event || event->kind == ProcessEvent::Kind::ThreadExited) return;
  if (event->kind == ProcessEvent::Kind::Stopped) {
    auto found = threads_.find(tid);
    if (found == threads_.end()) return;
    found->second.sigstop_expected = true;  // not consumed by this event
  }
  keep_pending(*event, {});
}

}  // namespace stub::process
