// Non-stop mode (gdb's `set non-stop on`), as gdbserver serves it:
// QNonStop:1/0, vStopped, vCtrlC, `?` listing every stopped thread, and
// resumes that act per thread and answer OK at once (each stop follows as
// a `%Stop:` notification; stub/session/session_non_stop.cc).
//
// btstub's own history features are not offered in non-stop mode (see
// docs/protocol.md): QNonStop:1 is refused while branches are recorded or
// a thread replays, and monitor record start and bs/bc are refused while
// it is on. gdb's own record btrace (Qbtrace; gdb replays) is served.
#include "stub/session/handlers.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

using process::StepKind;

namespace {

// Why non-stop mode cannot be had now; nullopt when it can.
std::optional<std::string> non_stop_refusal(Session& s) {
  if (s.any_replaying()) {
    return "Non-stop mode is not supported while a thread replays its recorded history; go forward to its end first";
  }
  TraceBackend* backend = s.trace_backend;
  if (backend == nullptr) return std::nullopt;
  bool recording = backend->all_enabled() || !s.btrace_reads.client_enabled.empty();
  for (Process* process : s.inferiors().live()) {
    for (pid_t tid : process->threads()) recording = recording || backend->enabled(tid);
  }
  if (!recording) return std::nullopt;
  return "Non-stop mode is not supported while btstub records branches (--record, monitor record start or "
         "record btrace); stop recording first";
}

bool names_every_thread(const ThreadAction& action) {
  return !action.thread || action.thread->is_all();
}

// A thread's stop as `?` lists it: its last reported stop; before any, a
// program's first thread (a launched one stopped with SIGTRAP, an attached
// one with signal 0). As in gdbserver, the other threads of a program
// btstub stopped without the client hearing of it (attached) are not
// listed: gdb takes them for running and stops them with vCont;t, whose
// stop is then told (non_stop_resume).
std::optional<protocol::StopReply> listed_stop(Session& s, Process& process, pid_t tid) {
  if (auto found = s.thread_stops.find(tid); found != s.thread_stops.end()) return found->second;
  if (s.last_stop && s.last_stop->thread && s.last_stop->thread->tid == tid) return *s.last_stop;
  if (s.last_stop || tid != process.pid()) return std::nullopt;
  ProcessEvent event;
  event.pid = process.pid();
  event.tid = tid;
  event.signal = process.attached() ? 0 : 5;  // SIGTRAP
  protocol::StopReply stop = s.make_stop_reply(event);
  s.thread_stops[tid] = stop;
  return stop;
}

}  // namespace

Reply handle(Session& s, const SetNonStop& req) {
  if (req.enable == s.non_stop) return Reply::now(reply_ok());
  if (s.running()) return error(btstub::ErrorCode::InvalidArgument, "Cannot change the stop mode while the program runs");
  if (req.enable) {
    if (auto refused = non_stop_refusal(s)) return error(btstub::ErrorCode::NotSupported, *refused);
  }
  std::vector<Process*> switched;
  for (Process* process : s.inferiors().live()) {
    if (auto ok = process->set_non_stop(req.enable); !ok) {
      for (Process* back : switched) (void)back->set_non_stop(!req.enable);
      return error(ok.error());
    }
    switched.push_back(process);
  }
  s.inferiors().set_non_stop(req.enable);
  s.non_stop = req.enable;
  s.thread_stops.clear();
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const StopNotificationAck&) { return Reply::now(s.stop_notifications.acknowledge()); }

Reply handle(Session& s, const InterruptRequest&) {
  s.on_interrupt();
  return Reply::now(reply_ok());
}

Reply non_stop_stop_reasons(Session& s) {
  for (Process* process : s.inferiors().live()) {
    for (pid_t tid : process->threads()) {
      if (process->thread_running(tid)) continue;
      if (auto stop = listed_stop(s, *process, tid)) {
        s.stop_notifications.enqueue(s.stop_reply_payload(*stop), tid, process->pid());
      }
    }
  }
  return Reply::now(s.stop_notifications.head_or_ok());
}

namespace {

// vCont;t of one thread: a running one is asked to stop; one stopped
// without the client being told (attached in non-stop mode) has its stop
// told now, as gdbserver reports the SIGSTOP it keeps pending from the
// attach; one whose stop the client knows stays as it is.
Expected<void> stop_one(Session& s, Process& process, pid_t tid) {
  if (process.thread_running(tid)) return process.stop_thread(tid);
  if (s.thread_stops.count(tid) != 0 || s.stop_notifications.holds(tid)) return {};
  ProcessEvent event;
  event.pid = process.pid();
  event.tid = tid;
  s.thread_stops[tid] = s.make_stop_reply(event);
  s.queue_stop(s.thread_stops[tid]);
  return {};
}

// A thread already running keeps running; one whose stop the client has
// not acknowledged yet stays stopped for an action that names every thread
// (the client does not know it stopped). Returns whether it was resumed.
Expected<bool> run_one(Session& s, Process& process, pid_t tid, const ThreadAction& action) {
  if (process.thread_running(tid)) return false;
  if (names_every_thread(action) && s.stop_notifications.holds(tid)) return false;
  const StepKind kind = action.action == ResumeAction::Step ? StepKind::SingleStep : StepKind::Continue;
  const int signal = action.signal == 0 ? 0 : gdb_signal_to_host(action.signal);
  if (auto ok = process.resume(tid, kind, signal); !ok) return ok.error();
  s.thread_stops.erase(tid);
  return true;
}

}  // namespace

Reply non_stop_resume(Session& s, const Resume& req) {
  if (req.direction == Direction::Reverse) {
    return error(btstub::ErrorCode::NotSupported, "reverse execution is not supported in non-stop mode");
  }
  if (req.resume_addr) {
    return error(btstub::ErrorCode::NotSupported, "Resuming at an address is not supported in non-stop mode");
  }
  if (!s.has_process()) return no_process_reply();
  // A thread that cannot be acted on (killed from outside meanwhile: its
  // end is reported) does not keep the others from their actions; the
  // request fails only when nothing was done.
  std::optional<btstub::Error> failure;
  bool acted = false;
  for (Process* process : s.inferiors().live()) {
    for (pid_t tid : process->threads()) {
      const ThreadAction* action = action_for(req, process->pid(), tid);
      if (action == nullptr) continue;
      if (action->action == ResumeAction::Stop) {
        auto stopped = stop_one(s, *process, tid);
        if (!stopped) failure = stopped.error();
        acted = acted || stopped.ok();
        continue;
      }
      auto resumed = run_one(s, *process, tid, *action);
      if (!resumed) failure = resumed.error();
      acted = acted || resumed.ok();
    }
  }
  if (failure && !acted) return error(*failure);
  s.deliver_owed_interrupt();  // a vCtrlC that came while every thread stood
  return Reply::now(reply_ok());
}

}  // namespace stub::session
