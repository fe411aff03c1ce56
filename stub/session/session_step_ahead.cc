// When the session lets a step run ahead of the client (stub/session/step_ahead.h),
// and which requests may see the program while it stands one step ahead.
#include "stub/session/session.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

void Session::run_ahead() {
  if (!run_ahead_due_) return;
  run_ahead_due_ = false;
  const pid_t tid = last_stopped_thread();
  if (tid == 0 || !may_run_ahead(tid)) return;
  step_ahead.run(*program(), tid, signals_passed(*program()));
}

// Nothing but the client may see the step early, and the client only
// through requests that the step does not change (leaves_step_ahead). So:
// one process with one thread (another would see memory change), stopped;
// not recording (the trace would hold a step the client never took) nor
// replaying; no debug register armed (a watchpoint would fire early); no
// fork child held.
bool Session::may_run_ahead(pid_t tid) {
  Process* owner = program();
  if (owner == nullptr || running_ || inferiors_.live().size() != 1 || general_fork_child != 0) return false;
  if (owner->fork_child() != 0 || owner->hw_points_in_use()) return false;
  std::vector<pid_t> threads = owner->threads();
  if (threads.size() != 1 || threads.front() != tid) return false;
  if (replaying(tid)) return false;
  if (trace_backend != nullptr && (trace_backend->all_enabled() || trace_backend->enabled(tid))) return false;
  return true;
}

// What gdb asks between one step and the next: memory (the frame's stack
// slots, shown as before the step), breakpoints going in and out around a
// `stepi` command, and the thread list. Resumes are the resume handler's
// to decide. Everything else sees the program back where it stopped.
bool Session::leaves_step_ahead(const protocol::Request& request) {
  if (std::holds_alternative<protocol::ReadMemory>(request) || std::holds_alternative<protocol::Resume>(request) ||
      std::holds_alternative<protocol::QueryThreadInfoFirst>(request) ||
      std::holds_alternative<protocol::QueryThreadInfoNext>(request) ||
      std::holds_alternative<protocol::ThreadAlive>(request)) {
    return true;
  }
  if (const auto* insert = std::get_if<protocol::InsertBreakpoint>(&request)) {
    return insert->type == protocol::BreakpointType::Software;
  }
  if (const auto* remove = std::get_if<protocol::RemoveBreakpoint>(&request)) {
    return remove->type == protocol::BreakpointType::Software;
  }
  if (const auto* xfer = std::get_if<protocol::XferRead>(&request)) return xfer->object == "threads";
  return false;
}

}  // namespace stub::session
