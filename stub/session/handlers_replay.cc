// Reverse execution and forward replay: bs/bc, and c/s/vCont while the
// resumed thread stands in its recorded past, answered from the history by
// the replay engine (stub/replay/replay_engine.h). The program itself does not run.
#include <algorithm>

#include "stub/session/handlers.h"
#include "stub/replay/replay_engine.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

namespace {

using decoder::ReplayStop;

std::vector<uint64_t> breakpoint_addresses(const Session& s) {
  std::vector<uint64_t> out(s.software_breakpoints.begin(), s.software_breakpoints.end());
  out.insert(out.end(), s.hardware_breakpoints.begin(), s.hardware_breakpoints.end());
  return out;
}

// The thread a resume moves through its history: the one told to step,
// else the Hc thread, else the one that last stopped, else the selected
// one (within the process Hc pPID.0 names: Session::within_continue_process).
pid_t replay_thread(const Session& s, const Resume& req) {
  for (const auto& action : req.actions) {
    if (action.action == ResumeAction::Step && action.thread && action.thread->tid > 0) return action.thread->tid;
  }
  if (s.continue_thread > 0) return s.continue_thread;
  if (const pid_t last = s.last_stopped_thread(); last != 0) return s.within_continue_process(last);
  return s.within_continue_process(s.current_thread());
}

bool steps(const Resume& req, pid_t tid) {
  for (const auto& action : req.actions) {
    if (action.thread && action.thread->tid > 0 && action.thread->tid != tid) continue;
    return action.action == ResumeAction::Step;
  }
  return false;
}

// A replay stop looks like a live one (thread, expedited pc/sp/fp as far as
// the history knows them) so gdb shows frames as usual. `gdb_signal`: the
// stop's own instead of SIGTRAP's.
Reply replay_stop_reply(Session& s, pid_t tid, ReplayStop how, std::optional<int> gdb_signal = std::nullopt) {
  protocol::StopReply stop;
  stop.kind = protocol::StopReply::Kind::Signal;
  stop.signal = gdb_signal.value_or(5);  // SIGTRAP
  // Where the program was given a signal, the signal, as record full
  // reports it: gdb stops or goes on as `handle` says.
  if (how == ReplayStop::Signal) {
    if (const int delivered = s.replay()->signal(tid); delivered != 0) {
      stop.signal = protocol::host_signal_to_gdb(delivered);
    }
  }
  // The client's interrupt stopped a long scan: SIGINT, as an interrupted
  // run reports it (and gdb's record full an interrupted replay).
  if (how == ReplayStop::Interrupted) stop.signal = 2;  // GDB_SIGNAL_INT
  stop.thread = s.thread_id(tid);
  if (auto regs = s.thread_registers(tid)) {
    for (auto reg : {Amd64Reg::rbp, Amd64Reg::rsp, Amd64Reg::rip}) {
      auto n = static_cast<unsigned>(reg);
      if (!regs->available(n)) continue;
      const uint8_t* p = regs->bytes(n);
      stop.expedited.emplace_back(n, std::vector<uint8_t>(p, p + amd64_register_size(n)));
    }
    const uint64_t pc = regs->get_u64(Amd64Reg::rip);
    if (how == ReplayStop::Breakpoint) {
      if (s.software_breakpoints.count(pc) != 0 && s.client_features.swbreak) {
        stop.reason = StopReason::SoftwareBreakpoint;
      } else if (s.hardware_breakpoints.count(pc) != 0 && s.client_features.hwbreak) {
        stop.reason = StopReason::HardwareBreakpoint;
      }
    }
  }
  if (auto watch = s.replay()->take_watch_hit()) {
    protocol::BreakpointType type = protocol::BreakpointType::AccessWatch;
    if (watch->kind == process::WatchKind::Write) type = protocol::BreakpointType::WriteWatch;
    if (watch->kind == process::WatchKind::Read) type = protocol::BreakpointType::ReadWatch;
    s.set_hardware_reason(stop, type, watch->address);
  }
  if (how == ReplayStop::HistoryBegin) stop.reason = StopReason::ReplayBegin;
  if (how == ReplayStop::HistoryEnd) stop.reason = StopReason::ReplayEnd;
  s.general_thread = tid;
  s.last_stop = stop;
  return Reply::now(s.stop_reply_payload(stop));
}

// Leaving the present from a live stop with a signal (the program's, not
// yet delivered): Session::owed_live_signals.
void note_owed_live_signal(Session& s) {
  if (s.any_replaying()) return;
  if (const auto signal = last_stop_signal(s); signal && signal->second != SIGTRAP) {
    s.owed_live_signals[signal->first] = signal->second;
  }
}

Reply reverse(Session& s, const Resume& req) {
  const pid_t tid = replay_thread(s, req);
  if (Process* owner = s.inferiors().owner_of(tid); owner != nullptr && owner != s.program()) {
    // A fork child kept with detach-on-fork off has no recorded history:
    // the tracer follows the program only.
    return error(btstub::make_error(btstub::ErrorCode::NotSupported,
                                    "Reverse execution is not available for process " +
                                        std::to_string(owner->pid()) +
                                        ": btstub records only the program it started or attached to."));
  }
  ReplayEngine* engine = s.trace_backend != nullptr ? s.replay() : nullptr;
  if (engine == nullptr) {
    return error(btstub::make_error(btstub::ErrorCode::NotSupported,
                                    "Reverse execution needs a recorded history (btstub --record, or "
                                    "'monitor record start' before running)"));
  }
  // Ctrl-C sent while the program was stopped: the stop is here.
  if (s.take_owed_interrupt()) return replay_stop_reply(s, tid, ReplayStop::Interrupted);
  engine->set_scan_turn(s.replay_turn);
  // gdb waits for a resume's stop reply without a timeout: the history not
  // summed up in the idle time since the stop is summed up now, before a
  // read far back needs it inside a memory read gdb gives up on after 2 s.
  s.sum_up_past();
  note_owed_live_signal(s);
  auto moved = steps(req, tid) ? engine->step_back(tid) : engine->continue_back(tid, breakpoint_addresses(s));
  if (!moved) return error(moved.error());
  return replay_stop_reply(s, tid, *moved);
}

}  // namespace

std::optional<Reply> replay_resume(Session& s, const Resume& req) {
  if (req.direction == Direction::Reverse) return reverse(s, req);
  const pid_t tid = replay_thread(s, req);
  if (!s.replaying(tid)) {
    // The program runs again: every thread leaves its past.
    s.go_live();
    return std::nullopt;
  }
  if (s.take_owed_interrupt()) return replay_stop_reply(s, tid, ReplayStop::Interrupted);
  ReplayEngine* engine = s.replay();
  engine->set_scan_turn(s.replay_turn);
  auto moved = steps(req, tid) ? engine->step_forward(tid) : engine->continue_forward(tid, breakpoint_addresses(s));
  if (!moved) {
    // The thread stays where it was. gdb takes an error reply to a forward
    // resume for a stop without a signal but keeps the last stop's reason:
    // after a watchpoint's stop it finds the watched value unchanged and
    // resumes again, forever (a reverse resume it ends). A stop reply
    // without a signal (gdb: "Program stopped.") with the reason on the
    // console ends it either way.
    Reply stopped = replay_stop_reply(s, tid, ReplayStop::Moved, 0);
    stopped.console = "warning: " + moved.error().message + "\n";
    return stopped;
  }
  return replay_stop_reply(s, tid, *moved);
}

Expected<void> check_writable(Session& s, pid_t tid) {
  if (!s.replaying(tid)) return {};
  return s.replay()->check_writable(tid);
}

std::string replay_status(Session& s) {
  if (s.trace_backend == nullptr) return "Replay is not available: this btstub has no branch tracing.\n";
  ReplayEngine* engine = s.replay();
  if (engine == nullptr) return "No program.\n";
  return engine->status();
}

}  // namespace stub::session
