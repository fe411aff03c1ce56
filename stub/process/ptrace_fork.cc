// fork and vfork of the debugged program. The child is reported by the
// kernel already traced and stopped. Without fork events (the client did not
// offer fork-events+/vfork-events+) we do not debug it: it leaves at once
// without our int3s: a fork child has its own copy of the memory, which
// still holds every inserted breakpoint, and would die of SIGTRAP on the
// first it reaches (gdbserver does the same). A vfork child shares the
// parent's memory, so its breakpoints must stay for the parent.
//
// With fork events the (v)fork is a stop of the parent (ProcessEvent::
// fork_child) and the child is held, stopped, until the client detaches it
// (D;PID: after removing its breakpoints from it, z0 with Hg on the child)
// or follows it (D on the parent: the child becomes the debugged process).
// One child is held at a time. With gdb's detach-on-fork off the client
// debugs the child too: adopt_fork_child makes it a PtraceProcess of its own
// (stub/process/process_group.h keeps both, stub/process/wait_routes.h routes their wait
// statuses); it is not branch-traced.
//
// A vfork child runs in our memory until it execs or exits, and with it in
// the branch tracer's int3s, which nobody would catch in the child: it
// would die of SIGTRAP. The parent thread is blocked meanwhile, so from its
// vfork event to its vforkdone the tracer's int3s are out of memory
// (take_out_trace_int3s) and every other thread stays stopped: a traced
// one would pass transfers unseen and its history would lose branches. A
// resume the client asks for one waits for the vforkdone. The parent's own
// history loses nothing: it runs no code of its own until the vfork
// returns, and the tracer's int3s are the same ones afterwards. The
// client's breakpoints stay as they are: gdb takes them out around a vfork
// when it has vfork events, and gdbserver leaves them when it has not. No
// checkpoint is taken meanwhile: the tracer takes them at stops of a
// thread of its own, and none runs.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {
namespace {

using namespace ptrace_detail;

// Writes one byte into another process's memory: /proc/PID/mem, else one
// word at a time through PTRACE_POKEDATA (the child is stopped and traced).
bool write_child_memory(pid_t child, uint64_t addr, uint8_t byte) {
  if (write_tracee_memory(child, addr, {byte})) return true;
  auto word = do_ptrace(PTRACE_PEEKDATA, child, addr, nullptr);
  if (!word) return false;
  long value = *word;
  std::memcpy(&value, &byte, 1);  // little-endian: the lowest byte is at addr
  return do_ptrace(PTRACE_POKEDATA, child, addr, reinterpret_cast<void*>(value)).ok();
}

}  // namespace

void PtraceProcess::set_fork_events(bool fork, bool vfork) {
  fork_events_ = fork;
  vfork_events_ = vfork;
}

std::optional<ProcessEvent> PtraceProcess::handle_fork(pid_t parent, bool vfork) {
  unsigned long new_pid = 0;
  std::optional<ProcessEvent> event;
  if (do_ptrace(PTRACE_GETEVENTMSG, parent, 0, &new_pid) && new_pid > 0) {
    pid_t child = static_cast<pid_t>(new_pid);
    int status = first_status_of_new_tracee(child);
    bool report = (vfork ? vfork_events_ : fork_events_) && !held_child_ && WIFSTOPPED(status);
    // Reported, the event stops every thread anyway (next_event).
    if (vfork) take_out_trace_int3s(parent, !report);
    if (WIFSTOPPED(status)) {
      if (!vfork) {
        if (!report) {
          for (const auto& [addr, original] : breakpoints_) (void)write_child_memory(child, addr, original);
        }
        // The branch tracer's int3s too: the child is not traced.
        for (const auto& [addr, int3] : trace_int3s_) (void)write_child_memory(child, addr, int3.original);
      }
      if (report) {
        held_child_ = HeldChild{child, vfork, vfork ? std::map<uint64_t, uint8_t>{} : breakpoints_.get()};
        event = ProcessEvent{};
        event->tid = parent;
        event->signal = SIGTRAP;
        event->fork_child = child;
        event->vfork = vfork;
      } else {
        (void)do_ptrace(PTRACE_DETACH, child, 0, nullptr);
      }
    }
  }
  if ((event && vfork) || vfork_parent_ == parent) {
    // The parent then says when the child has let go of its memory: gdb
    // puts the breakpoints back on that (vforkdone), and so do we ours.
    auto found = threads_.find(parent);
    const bool exit_events = found != threads_.end() && found->second.exit_events;
    const long opts = ptrace_options(exit_events) | PTRACE_O_TRACEVFORKDONE;
    (void)do_ptrace(PTRACE_SETOPTIONS, parent, 0, reinterpret_cast<void*>(opts));
  }
  if (!event) resume_after_event_stop(parent);
  return event;
}

void PtraceProcess::take_out_trace_int3s(pid_t parent, bool hold) {
  if (vfork_parent_ != 0 || (trace_int3s_.empty() && (hook_ == nullptr || !hook_->uses_breakpoints()))) return;
  for (const auto& [addr, int3] : trace_int3s_) {
    if (breakpoints_.count(addr) == 0) (void)raw_write(addr, {int3.original});
  }
  vfork_parent_ = parent;
  vfork_reported_ = !hold;
  if (!hold || stopping_all_) return;  // every thread is being stopped already
  // Threads still running are stopped now and start again at vforkdone
  // as they were going; what they had to say meanwhile stays pending.
  std::vector<pid_t> running;
  for (const auto& [tid, thread] : threads_) {
    if (tid != parent && thread.running) running.push_back(tid);
  }
  if (running.empty()) return;
  stop_all_threads(parent);
  for (pid_t tid : running) {
    auto found = threads_.find(tid);
    if (found == threads_.end() || found->second.running || found->second.deferred) continue;
    found->second.deferred = found->second.requested;
    found->second.deferred_signal = 0;
  }
}

// The vfork child exec'd or exited: the tracer's int3s go back, and the
// threads held meanwhile start, unless the client hears of it (vfork
// events: it sees every thread stopped and resumes them anew).
std::optional<ProcessEvent> PtraceProcess::handle_vfork_done(pid_t tid, ThreadState& thread) {
  bool report = vfork_events_;
  if (tid == vfork_parent_) {
    vfork_parent_ = 0;
    report = vfork_reported_;  // the client heard of this vfork: it waits for its end
    for (const auto& [addr, int3] : trace_int3s_) {
      if (breakpoints_.count(addr) == 0) (void)raw_write(addr, {kInt3});
    }
    release_vfork_held(!report && !stopping_all_);
  }
  if (report) {
    ProcessEvent event;
    event.tid = tid;
    event.signal = SIGTRAP;
    event.vfork_done = true;
    return event;
  }
  if (!stopping_all_) (void)raw_resume(tid, thread, thread.last_kind, 0);
  return std::nullopt;
}

// Threads whose resume waited for a vforkdone start (`start`), or are let
// go of: a signal the client gave one is owed to its next resume.
void PtraceProcess::release_vfork_held(bool start) {
  for (auto& [tid, thread] : threads_) {
    if (!thread.deferred) continue;
    const StepKind kind = *thread.deferred;
    const int signal = thread.deferred_signal;
    thread.deferred.reset();
    thread.deferred_signal = 0;
    if (start && !thread.pending) {
      (void)start_thread(tid, thread, kind, signal);
    } else if (start) {
      thread.deferred = kind;  // its pending event is reported next (next_event)
      thread.deferred_signal = signal;
      recheck_pending_ = true;
    } else if (signal != 0) {
      owe_signal(tid, thread, signal);
    }
  }
}

Expected<void> PtraceProcess::remove_fork_child_breakpoint(uint64_t addr) {
  if (!held_child_) return btstub::make_error(btstub::ErrorCode::NoProcess, "No fork child");
  auto found = held_child_->int3s.find(addr);
  if (found == held_child_->int3s.end()) return {};  // a vfork child shares the parent's (z0 there)
  if (!write_child_memory(held_child_->pid, addr, found->second)) {
    return btstub::make_error(btstub::ErrorCode::MemoryFault, "Cannot write the fork child's memory at " + hex(addr));
  }
  held_child_->int3s.erase(found);
  return {};
}

Expected<void> PtraceProcess::detach_fork_child() {
  if (!held_child_) return btstub::make_error(btstub::ErrorCode::NoProcess, "No fork child");
  HeldChild child = std::move(*held_child_);
  held_child_.reset();
  for (const auto& [addr, original] : child.int3s) (void)write_child_memory(child.pid, addr, original);
  auto r = do_ptrace(PTRACE_DETACH, child.pid, 0, nullptr);
  if (!r) return r.error();
  return {};
}

// The parent goes (detached, as D asks); the child, stopped at its first
// instruction after fork(), becomes the one process we debug. It inherited
// our ptrace options. Its int3s not yet removed by the client stay ours.
Expected<void> PtraceProcess::follow_fork_child() {
  if (!held_child_) return btstub::make_error(btstub::ErrorCode::NoProcess, "No fork child");
  HeldChild child = std::move(*held_child_);
  held_child_.reset();
  if (hook_ != nullptr) {
    for (const auto& [tid, state] : threads_) {
      if (hook_->traces(tid)) hook_->on_thread_exited(tid);
    }
  }
  if (alive_) (void)detach();
  pid_ = child.pid;
  alive_ = true;
  btstub_is_parent_ = false;
  ended_while_stopping_.reset();
  threads_.clear();
  threads_[child.pid] = ThreadState{};
  breakpoints_.edit() = child.int3s;
  last_reported_ = 0;
  open_memory();
  if (hook_ != nullptr) {
    // Another address space, as after an exec: what the tracer mapped into
    // the parent (the translating tracer's code cache and logs are not
    // forked) and knew of its code is not the child's. A fork child's
    // history starts here; a vfork child, in the memory of the parent just
    // let go, is not traced (nothing may be mapped or left there).
    hook_->on_exec(child.pid);
    if (!child.vfork) hook_->on_thread_created(child.pid, 0);
  }
  return {};
}

// The child, stopped at its first instruction after fork(), becomes a
// process of its own; it inherited our ptrace options. The int3s it
// inherited and the client did not remove stay, as its breakpoints.
Expected<std::unique_ptr<Process>> PtraceProcess::adopt_fork_child() {
  if (!held_child_) return btstub::make_error(btstub::ErrorCode::NoProcess, "No fork child");
  HeldChild child = std::move(*held_child_);
  held_child_.reset();
  std::unique_ptr<PtraceProcess> process(new PtraceProcess(child.pid, attached_));
  process->threads_[child.pid] = ThreadState{};
  process->btstub_is_parent_ = false;
  // A vfork child runs in our memory, over our breakpoints: they are its
  // too (as gdbserver clones its list), so that its hit reads as one (pc
  // back on the address, swbreak) and gdb's z0 in it finds it.
  process->breakpoints_.edit() = child.vfork ? breakpoints_.get() : child.int3s;
  process->pass_signals_ = pass_signals_;
  process->thread_events_ = thread_events_;
  process->fork_events_ = fork_events_;
  process->vfork_events_ = vfork_events_;
  process->open_memory();
  return std::unique_ptr<Process>(std::move(process));
}

}  // namespace stub::process
