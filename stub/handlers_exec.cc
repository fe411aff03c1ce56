// Running the program: resume requests, breakpoints, signals, kill, detach.
#include <csignal>

#include "stub/debug_registers.h"
#include "stub/handlers.h"

namespace stub {

namespace {

Reply error(const btstub::Error& e) { return Reply::now(reply_error(e)); }

// The action that applies to `tid`: the leftmost one naming it (or its
// process, or every thread), as vCont defines.
const ThreadAction* action_for(const Resume& req, pid_t pid, pid_t tid) {
  for (const auto& action : req.actions) {
    if (!action.thread) return &action;
    const ThreadId& id = *action.thread;
    if (id.pid > 0 && id.pid != pid) continue;
    if (id.is_all() || id.tid == tid) return &action;
  }
  return nullptr;
}

// A signal gdb names in a resume is always delivered (`signal SIGINT` sends
// SIGINT although gdb's QProgramSignals list leaves it out): that list only
// governs signals the stub would deliver on its own, as gdbserver reads it.
int host_signal_for(const Session&, int gdb_signal) {
  if (gdb_signal == 0) return 0;
  return gdb_signal_to_host(gdb_signal);
}

// Legacy c/s/C/S carry no thread: the step goes to the Hc thread (or the one
// that last stopped), and continue to every thread.
Resume with_legacy_threads(const Session& s, Resume req, pid_t pid) {
  for (auto& action : req.actions) {
    if (action.thread || action.action != ResumeAction::Step) continue;
    pid_t tid = s.continue_thread > 0 ? s.continue_thread : s.current_thread();
    action.thread = ThreadId{pid, tid};
  }
  return req;
}

}  // namespace

Reply handle(Session& s, const InsertBreakpoint& req) {
  if (!s.has_process()) return no_process_reply();
  // x86 has no read-only watch: like gdbserver, refuse Z3 so gdb emulates
  // rwatch with an access watchpoint (stub/debug_registers.h).
  if (req.type == BreakpointType::ReadWatch && !kHasReadOnlyWatchpoints) return Reply::now(reply_empty());
  // Without working debug registers answer empty, so gdb falls back to
  // software watchpoints; running out of them is an error gdb shows.
  if (req.type != BreakpointType::Software && !s.process()->has_hw_points()) return Reply::now(reply_empty());
  auto ok = req.type == BreakpointType::Software ? s.process()->insert_breakpoint(req.addr)
                                                 : s.process()->insert_hw_point(req.type, req.addr, req.kind);
  if (!ok) return error(ok.error());
  // A replay stops at these addresses too.
  if (req.type == BreakpointType::Software) s.software_breakpoints.insert(req.addr);
  if (req.type == BreakpointType::Hardware) s.hardware_breakpoints.insert(req.addr);
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const RemoveBreakpoint& req) {
  if (!s.has_process()) return no_process_reply();
  if (req.type == BreakpointType::ReadWatch && !kHasReadOnlyWatchpoints) return Reply::now(reply_empty());
  if (req.type != BreakpointType::Software && !s.process()->has_hw_points()) return Reply::now(reply_empty());
  auto ok = req.type == BreakpointType::Software ? s.process()->remove_breakpoint(req.addr)
                                                 : s.process()->remove_hw_point(req.type, req.addr, req.kind);
  if (!ok) return error(ok.error());
  if (req.type == BreakpointType::Software) s.software_breakpoints.erase(req.addr);
  if (req.type == BreakpointType::Hardware) s.hardware_breakpoints.erase(req.addr);
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const Resume& raw) {
  if (!s.has_process()) return no_process_reply();
  Process& process = *s.process();
  Resume req = with_legacy_threads(s, raw, process.pid());
  if (auto replayed = replay_resume(s, req)) return *replayed;

  if (req.resume_addr) {
    pid_t tid = s.current_thread();
    auto regs = process.read_registers(tid);
    if (!regs) return error(regs.error());
    regs->set_u64(Amd64Reg::rip, *req.resume_addr);
    if (auto ok = process.write_registers(tid, *regs); !ok) return error(ok.error());
  }

  bool resumed_any = false;
  for (pid_t tid : process.threads()) {
    const ThreadAction* action = action_for(req, process.pid(), tid);
    if (action == nullptr || action->action == ResumeAction::Stop) continue;
    StepKind kind = action->action == ResumeAction::Step ? StepKind::SingleStep : StepKind::Continue;
    if (auto ok = process.resume(tid, kind, host_signal_for(s, action->signal)); !ok) {
      if (!resumed_any) return error(ok.error());
      continue;  // the others run; the failing thread is reported when it stops or exits
    }
    resumed_any = true;
  }
  if (!resumed_any) {
    return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "No thread to resume"));
  }
  s.last_stop.reset();
  s.mark_running();
  return Reply::later();
}

Reply handle(Session& s, const Kill& req) {
  if (s.has_process()) {
    (void)s.process()->kill();
    s.mark_process_gone();
  }
  // gdb reads no reply to `k`; vKill wants OK.
  Reply reply;
  if (req.pid) reply.payload = reply_ok();
  // Extended remote: the connection outlives the program, so gdb can run again.
  reply.close_connection = !s.extended;
  if (s.extended) s.last_stop.reset();
  return reply;
}

Reply handle(Session& s, const Detach&) {
  if (!s.has_process()) return no_process_reply();
  if (auto ok = s.process()->detach(); !ok) return error(ok.error());
  s.mark_process_gone();
  Reply reply = Reply::now(reply_ok());
  reply.close_connection = !s.extended;
  if (s.extended) s.last_stop.reset();
  return reply;
}

Reply handle(Session& s, const SetPassSignals& req) {
  s.pass_signals.clear();
  for (int gdb_signal : req.signals) s.pass_signals.insert(gdb_signal_to_host(gdb_signal));
  // The process layer delivers them itself, so other threads never stop.
  if (s.has_process()) s.process()->set_pass_signals(s.pass_signals);
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const SetProgramSignals& req) {
  s.program_signals.clear();
  for (int gdb_signal : req.signals) s.program_signals.insert(gdb_signal_to_host(gdb_signal));
  s.program_signals_set = true;
  return Reply::now(reply_ok());
}

}  // namespace stub
