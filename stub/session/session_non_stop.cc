// The session's side of non-stop mode: which threads run, and the queue of
// stop replies told by `%Stop:` notifications (protocol/stop_notifications.h).
// The packets are in handlers_non_stop.cc.
#include <algorithm>

#include "stub/session/session.h"

namespace stub::session {

bool Session::running() const {
  if (!non_stop) return running_;
  return std::any_of(inferiors_.live().begin(), inferiors_.live().end(),
                     [](const Process* process) { return process->has_running_threads(); });
}

bool Session::thread_running(pid_t tid) const {
  if (!non_stop) return running_;
  const Process* owner = inferiors_.owner_of(tid);
  return owner != nullptr && owner->thread_running(tid);
}

std::optional<std::string> Session::take_notification() {
  if (notifications_.empty()) return std::nullopt;
  std::string next = std::move(notifications_.front());
  notifications_.erase(notifications_.begin());
  return next;
}

void Session::queue_stop(const protocol::StopReply& stop) {
  const int64_t thread = stop.thread ? stop.thread->tid : 0;
  const int64_t process = stop.thread ? stop.thread->pid : stop.process.value_or(0);
  if (auto notification = stop_notifications.push(stop_reply_payload(stop), thread, process)) {
    notifications_.push_back(std::move(*notification));
  }
}

// As gdbserver's handle_target_event: every event is queued for the
// client; the selected thread stays what the client selected.
std::optional<std::string> Session::on_non_stop_event(const ProcessEvent& event, Process* process) {
  using Kind = ProcessEvent::Kind;
  if (event.kind == Kind::NoResumed) {
    // A client that does not know `N` waits, as it would with gdbserver.
    if (client_features.no_resumed) queue_stop(make_stop_reply(event));
    return std::nullopt;
  }
  protocol::StopReply stop = make_stop_reply(event);
  if (event.kind == Kind::Stopped) thread_stops[event.tid] = stop;
  if (event.kind == Kind::ThreadExited) thread_stops.erase(event.tid);
  if (event.kind == Kind::Exited || event.kind == Kind::Killed) {
    const int64_t pid = process->pid();
    std::erase_if(thread_stops, [pid](const auto& entry) {
      return entry.second.thread && entry.second.thread->pid == pid;
    });
    if (general_thread != 0 && inferiors_.owner_of(general_thread) == process) general_thread = 0;
    forget_process(process);
  }
  last_stop = stop;
  queue_stop(stop);
  return std::nullopt;
}

}  // namespace stub::session
