// Running the program: resume requests, breakpoints, signals, kill, detach.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <utility>

#include "stub/process/debug_registers.h"
#include "stub/session/handlers.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

using process::StepKind;
using process::kHasReadOnlyWatchpoints;

// Thread 0 ("any thread") names the whole process, as gdbserver reads a
// pid-only ptid.
const ThreadAction* action_for(const Resume& req, pid_t pid, pid_t tid) {
  for (const auto& action : req.actions) {
    if (!action.thread) return &action;
    const ThreadId& id = *action.thread;
    if (id.pid > 0 && id.pid != pid) continue;
    if (id.is_all() || id.is_any() || id.tid == tid) return &action;
  }
  return nullptr;
}

namespace {

// A signal gdb names in a resume is always delivered (`signal SIGINT` sends
// SIGINT although gdb's QProgramSignals list leaves it out): that list only
// governs signals the stub would deliver on its own, as gdbserver reads it.
int host_signal_for(const Session&, int gdb_signal) {
  if (gdb_signal == 0) return 0;
  return gdb_signal_to_host(gdb_signal);
}

// Legacy c/s/C/S (and bs, bc) carry no thread: the step goes to the Hc
// thread (or, within the process Hc pPID.0 names, the selected one or the
// one that last stopped), and continue to every thread.
Resume with_legacy_threads(const Session& s, Resume req, pid_t pid) {
  for (auto& action : req.actions) {
    if (action.thread || action.action != ResumeAction::Step) continue;
    pid_t tid = s.continue_thread > 0 ? s.continue_thread : s.within_continue_process(s.current_thread());
    const Process* owner = s.inferiors().owner_of(tid);
    action.thread = ThreadId{owner != nullptr ? owner->pid() : pid, tid};
  }
  return req;
}

// An int3 in data would change what the program reads there, so software
// breakpoints go into executable memory only, with one exception: gdb puts
// the breakpoint that ends an inferior call (`print getenv("X")`) on the
// stack just below a thread's stack pointer (gdbserver allows it anywhere).
Expected<void> software_breakpoint_allowed(Session& s, uint64_t addr) {
  Process& process = *s.process();
  auto executable = process.executable(addr);
  if (!executable || *executable) return {};
  constexpr uint64_t kNearStack = 64 * 1024;
  for (pid_t tid : process.threads()) {
    auto regs = process.read_general_registers(tid);
    if (!regs) continue;
    const uint64_t sp = regs->get_u64(protocol::Amd64Reg::rsp);
    if (addr + kNearStack >= sp && addr <= sp + kNearStack) return {};
  }
  char text[96];
  std::snprintf(text, sizeof text, "Cannot insert breakpoint at 0x%llx: not in executable memory",
                static_cast<unsigned long long>(addr));
  return btstub::make_error(btstub::ErrorCode::MemoryFault, text);
}

}  // namespace

Reply handle(Session& s, const InsertBreakpoint& req) {
  if (!s.has_process()) return no_process_reply();
  // x86 has no read-only watch: like gdbserver, refuse Z3 so gdb emulates
  // rwatch with an access watchpoint (stub/process/debug_registers.h).
  if (req.type == BreakpointType::ReadWatch && !kHasReadOnlyWatchpoints) return Reply::now(reply_empty());
  // Without working debug registers answer empty, so gdb falls back to
  // software watchpoints; running out of them is an error gdb shows.
  Process* process = s.process();  // may take a held fork child on: resolved once
  if (req.type != BreakpointType::Software && !process->has_hw_points()) return Reply::now(reply_empty());
  if (req.type == BreakpointType::Software) {
    if (auto allowed = software_breakpoint_allowed(s, req.addr); !allowed) return error(allowed.error());
  }
  auto ok = req.type == BreakpointType::Software ? process->insert_breakpoint(req.addr)
                                                 : process->insert_hw_point(req.type, req.addr, req.kind);
  if (!ok) return error(ok.error());
  // A replay stops at these addresses too; it replays the program only, so
  // a fork child's breakpoints are not its business.
  if (process == s.program()) {
    if (req.type == BreakpointType::Software) s.software_breakpoints.insert(req.addr);
    if (req.type == BreakpointType::Hardware) s.hardware_breakpoints.insert(req.addr);
  }
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const RemoveBreakpoint& req) {
  if (!s.has_process()) return no_process_reply();
  Process* holder = s.general_fork_child != 0 ? s.inferiors().holder_of_fork_child(s.general_fork_child) : nullptr;
  if (holder != nullptr && req.type == BreakpointType::Software) {
    // gdb takes its breakpoints out of a fork child before letting it go
    // (or, with detach-on-fork off, before inserting them again).
    auto ok = holder->remove_fork_child_breakpoint(req.addr);
    return ok ? Reply::now(reply_ok()) : error(ok.error());
  }
  if (req.type == BreakpointType::ReadWatch && !kHasReadOnlyWatchpoints) return Reply::now(reply_empty());
  Process* process = s.process();
  if (req.type != BreakpointType::Software && !process->has_hw_points()) return Reply::now(reply_empty());
  auto ok = req.type == BreakpointType::Software ? process->remove_breakpoint(req.addr)
                                                 : process->remove_hw_point(req.type, req.addr, req.kind);
  if (!ok) return error(ok.error());
  if (process == s.program()) {
    if (req.type == BreakpointType::Software) s.software_breakpoints.erase(req.addr);
    if (req.type == BreakpointType::Hardware) s.hardware_breakpoints.erase(req.addr);
  }
  return Reply::now(reply_ok());
}

// Resuming a held fork child debugs it from now on (detach-on-fork off):
// one named by its pid, or every one when an action covers all processes
// (schedule-multiple on), even if gdb asked nothing about it before. With
// detach-on-fork on gdb has let the child go (D;PID) before resuming.
static void adopt_resumed_fork_children(Session& s, const Resume& req) {
  for (const auto& action : req.actions) {
    if (action.action == ResumeAction::Stop) continue;
    if (!action.thread || (action.thread->pid <= 0 && action.thread->is_all())) {
      s.adopt_held_fork_children();
      return;
    }
    if (action.thread->pid > 0) (void)s.adopt_fork_child(static_cast<pid_t>(action.thread->pid));
  }
}

// A step already run ahead (stub/session/step_ahead.h) answers a resume that asks
// for exactly it: that thread steps, with no signal, from where it stopped.
// Any other resume first puts the program back.
static std::optional<Reply> answer_from_step_ahead(Session& s, const Resume& req) {
  Process* program = s.program();
  if (!s.step_ahead.active() || program == nullptr) return std::nullopt;
  const pid_t tid = s.step_ahead.tid();
  const ThreadAction* action = action_for(req, program->pid(), tid);
  // An owed interrupt is the program's to report: it runs for real.
  bool same_step = !s.interrupt_owed() && req.direction == Direction::Forward && !req.resume_addr && action != nullptr &&
                   action->action == ResumeAction::Step && action->signal == 0;
  auto event = same_step ? s.step_ahead.take(*program, tid) : std::nullopt;
  if (!event) {
    s.step_ahead.undo(*program);
    return std::nullopt;
  }
  s.last_stop.reset();
  s.mark_running();
  if (auto payload = s.on_process_event(*event)) return Reply::now(*payload);
  return Reply::later();
}

Reply handle(Session& s, const Resume& raw) {
  if (!s.has_process()) return no_process_reply();
  adopt_resumed_fork_children(s, raw);
  Process& current = *s.process();
  Resume req = with_legacy_threads(s, raw, current.pid());
  if (s.non_stop) return non_stop_resume(s, req);
  if (auto answered = answer_from_step_ahead(s, req)) return *answered;
  s.step_ahead.forget_program_state();  // the program runs for real: it may map or unmap
  if (auto replayed = replay_resume(s, req)) return *replayed;

  if (req.resume_addr) {
    pid_t tid = s.current_thread();
    auto regs = current.read_registers(tid);
    if (!regs) return error(regs.error());
    const protocol::RegisterFile before = *regs;
    regs->set_u64(Amd64Reg::rip, *req.resume_addr);
    // `c ADDR`: the tracer stores the move (as for a G or P that moves the pc).
    if (auto ok = write_client_registers(s, tid, before, *regs); !ok) return error(ok.error());
  }

  bool resumed_any = false;
  // The first live resume after the past: the signal a thread stood at then.
  const std::map<pid_t, int> owed = std::exchange(s.owed_live_signals, {});
  for (Process* process : s.inferiors().live()) {
    for (pid_t tid : process->threads()) {
      const ThreadAction* action = action_for(req, process->pid(), tid);
      if (action == nullptr || action->action == ResumeAction::Stop) continue;
      StepKind kind = action->action == ResumeAction::Step ? StepKind::SingleStep : StepKind::Continue;
      int signal = host_signal_for(s, action->signal);
      if (auto it = owed.find(tid); signal == 0 && it != owed.end() && s.program_gets(it->second)) signal = it->second;
      if (auto ok = process->resume(tid, kind, signal); !ok) {
        if (!resumed_any && ok.error().code == btstub::ErrorCode::NoProcess) {
          // Killed from outside while stopped (ESRCH): its death is the stop
          // reply, as gdbserver reports it ("terminated with signal SIGKILL").
          s.last_stop.reset();
          s.mark_running();
          return Reply::later();
        }
        if (!resumed_any) return error(ok.error());
        continue;  // the others run; the failing thread is reported when it stops or exits
      }
      resumed_any = true;
    }
  }
  if (!resumed_any) {
    // No thread left to run, but an end kept while all stopped (the
    // program exited while a thread's exit was being reported): that end
    // is the stop reply, which the next poll gives.
    const std::vector<Process*> live = s.inferiors().live();
    if (std::none_of(live.begin(), live.end(),
                     [](const Process* p) { return p->threads().empty() && p->has_pending_event(); })) {
      return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "No thread to resume"));
    }
  }
  s.last_stop.reset();
  s.mark_running();
  s.deliver_owed_interrupt();
  return Reply::later();
}

// vKill;PID and D;PID name a process: a pid that is not ours must not
// kill or detach ours (gdbserver answers E too).
static Expected<Process*> named_process(Session& s, int64_t pid) {
  if (Process* process = s.inferiors().find(static_cast<pid_t>(pid))) return process;
  return btstub::make_error(btstub::ErrorCode::NoProcess, "No such process");
}

// After a kill or detach of `pid` (nullopt: every process): outside
// extended mode the connection ends with the last process, and its stop is
// no longer anybody's.
static Reply after_process_gone(Session& s, Reply reply, std::optional<pid_t> pid) {
  // Non-stop: what the client was not told yet of a process it killed or
  // let go is no longer news (gdbserver's discard_queued_stop_replies);
  // the other processes' stops still are.
  s.stop_notifications.discard_unsent(pid);
  reply.close_connection = !s.extended && !s.has_process();
  if (s.extended || s.has_process()) s.last_stop.reset();
  return reply;
}

Reply handle(Session& s, const Kill& req) {
  // gdb reads no reply to `k`; vKill wants OK.
  Reply reply;
  if (req.pid) {
    if (!s.has_process()) return after_process_gone(s, Reply::now(reply_ok()), std::nullopt);
    // Without multiprocess gdb names its fake pid (42000): gdbserver's
    // handle_v_kill then kills the program, whatever the pid.
    const Process* program = s.program() != nullptr ? s.program() : s.inferiors().first();
    const int64_t pid = s.client_features.multiprocess ? *req.pid : program->pid();
    // gdb kills a fork child it has not followed yet by its pid too.
    (void)s.adopt_fork_child(static_cast<pid_t>(pid));
    auto process = named_process(s, pid);
    if (!process) return error(process.error());
    const pid_t killed = (*process)->pid();
    (void)(*process)->kill();
    s.forget_process(*process);
    return after_process_gone(s, Reply::now(reply_ok()), killed);
  }
  // `k` kills everything (gdb's `kill` sends vKill;PID per inferior),
  // fork children still held included.
  s.adopt_held_fork_children();
  std::vector<Process*> every = s.inferiors().live();
  for (Process* process : every) (void)process->kill();
  s.mark_process_gone();
  // LLDB waits for the program's end (lldb-server: "X09").
  if (s.lldb.client) reply = Reply::now("X09");
  return after_process_gone(s, reply, std::nullopt);
}

// D;PID of a held fork child lets it go; D of the parent while a child is
// held follows the child (follow-fork-mode child): the session goes on.
static Reply detach_with_fork_child(Session& s, const Detach& req, Process& parent, pid_t child) {
  if (s.general_fork_child == child) s.general_fork_child = 0;
  if (s.general_thread == child) s.general_thread = 0;
  if (*req.pid == child) {
    if (auto ok = parent.detach_fork_child(); !ok) return error(ok.error());
    return Reply::now(reply_ok());
  }
  if (auto ok = parent.follow_fork_child(); !ok) return error(ok.error());
  s.go_live();
  s.software_breakpoints.clear();
  s.hardware_breakpoints.clear();
  s.general_thread = 0;
  s.continue_thread = 0;
  s.continue_process = 0;
  s.last_stop.reset();
  return Reply::now(reply_ok());
}

// The thread and host signal of a reported stop by a signal (none for a
// breakpoint, watchpoint or other event stop).
static std::optional<std::pair<pid_t, int>> stop_signal(const StopReply& stop) {
  if (stop.kind != StopReply::Kind::Signal || !stop.thread || stop.thread->tid <= 0 || stop.reason != StopReason::None) {
    return std::nullopt;
  }
  const int host = gdb_signal_to_host(stop.signal);
  if (host == 0) return std::nullopt;
  return std::pair{static_cast<pid_t>(stop.thread->tid), host};
}

std::optional<std::pair<pid_t, int>> last_stop_signal(const Session& s) {
  return s.last_stop ? stop_signal(*s.last_stop) : std::nullopt;
}

// gdbserver gives a thread it lets go the signal the client last saw stop
// it, if the client passes that signal to the program (QProgramSignals;
// without that list, anything but SIGTRAP and SIGINT): a SIGUSR1 reported
// and then `detach` still reaches the program's handler.
static void pass_last_signal_on_detach(Session& s, Process& process) {
  bool owed = false;  // the live stop's, when the client went back since
  for (const auto& [tid, host] : s.owed_live_signals) {
    if (s.inferiors().owner_of(tid) != &process) continue;
    owed = true;
    if (s.program_gets(host)) process.deliver_on_detach(tid, host);
  }
  if (owed) return;
  if (s.non_stop) {
    // Each stopped thread has its own last reported stop (gdbserver's
    // get_detach_signal reads every thread's last status): all of them,
    // not only the stop reported last.
    for (const auto& [tid, stop] : s.thread_stops) {
      const auto signal = stop_signal(stop);
      if (!signal || s.inferiors().owner_of(tid) != &process) continue;
      if (s.program_gets(signal->second)) process.deliver_on_detach(tid, signal->second);
    }
    return;
  }
  const auto signal = last_stop_signal(s);
  if (!signal) return;
  const auto [tid, host] = *signal;
  if (s.program_gets(host) && s.inferiors().owner_of(tid) == &process) process.deliver_on_detach(tid, host);
}

Reply handle(Session& s, const Detach& req) {
  if (!s.has_process()) return no_process_reply();
  if (req.pid) {
    if (Process* holder = s.inferiors().holder_of_fork_child(static_cast<pid_t>(*req.pid))) {
      return detach_with_fork_child(s, req, *holder, static_cast<pid_t>(*req.pid));
    }
    auto process = named_process(s, *req.pid);
    if (!process) return error(process.error());
    if (pid_t child = (*process)->fork_child(); child != 0) return detach_with_fork_child(s, req, **process, child);
    pass_last_signal_on_detach(s, **process);
    const pid_t detached = (*process)->pid();
    if (auto ok = (*process)->detach(); !ok) return error(ok.error());
    s.forget_process(*process);
    return after_process_gone(s, Reply::now(reply_ok()), detached);
  }
  // Plain D: everything goes free, held fork children too (without the
  // int3s they inherited). One failure must not keep the others traced,
  // and a process detached (or failing to, gone) is debugged no more.
  std::vector<Process*> every = s.inferiors().live();
  std::optional<btstub::Error> failure;  // every process's, in one message
  auto note = [&failure](const Expected<void>& ok) {
    if (ok) return;
    if (failure) {
      failure->message += "; " + ok.error().message;
    } else {
      failure = ok.error();
    }
  };
  for (Process* process : every) {
    if (process->fork_child() != 0) note(process->detach_fork_child());
    pass_last_signal_on_detach(s, *process);
    note(process->detach());
  }
  s.general_fork_child = 0;
  s.mark_process_gone();
  if (failure) return after_process_gone(s, error(*failure), std::nullopt);
  return after_process_gone(s, Reply::now(reply_ok()), std::nullopt);
}

Reply handle(Session& s, const SetPassSignals& req) {
  s.pass_signals.clear();
  // A gdb signal with no host number (0) is no signal to pass: a stop
  // without a signal (T00) would be taken for one and resumed unseen.
  for (int gdb_signal : req.signals) {
    if (int host = gdb_signal_to_host(gdb_signal); host != 0) s.pass_signals.insert(host);
  }
  // The process layer delivers them itself, so other threads never stop.
  s.update_passed_signals();
  return Reply::now(reply_ok());
}

// gdb's `catch syscall`: the process layer stops a continue at the calls'
// entries and returns (PTRACE_SYSCALL). Refused while recording: the
// tracer steps over every system call, where PTRACE_SYSCALL would stop
// before the call it has not yet stored.
Reply handle(Session& s, const SetCatchSyscalls& req) {
  std::optional<std::set<int>> caught;
  if (req.enable) {
    // (Without a program yet, catching stays allowed, as it always was.)
    if (s.any_replaying() || (s.process() != nullptr && s.records_a_thread())) {
      return error(btstub::make_error(btstub::ErrorCode::NotSupported,
                                      "Cannot catch system calls while recording (btstub's tracer steps each one)"));
    }
    caught = std::set<int>(req.syscalls.begin(), req.syscalls.end());
  }
  for (Process* process : s.inferiors().live()) {
    if (auto r = process->set_syscall_catch(caught); !r) return error(r.error());
  }
  s.caught_syscalls = std::move(caught);
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const SetProgramSignals& req) {
  s.program_signals.clear();
  for (int gdb_signal : req.signals) {
    if (int host = gdb_signal_to_host(gdb_signal); host != 0) s.program_signals.insert(host);
  }
  s.program_signals_set = true;
  return Reply::now(reply_ok());
}

}  // namespace stub::session
