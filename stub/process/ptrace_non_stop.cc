// Non-stop mode (gdb's `set non-stop on`): an event stops only the thread
// that had it (next_event skips the all-stop SIGSTOPs), and the client
// stops a running thread on its own with vCont;t (stop_thread). A thread
// asked to stop gets a SIGSTOP; handle_status reports that SIGSTOP as a
// stop with signal 0, as gdbserver reports it (T00). An event of its own
// that comes first is its stop instead; the SIGSTOP still queued is then
// absorbed when the thread next runs (sigstop_expected).
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "stub/process/ptrace_process.h"

namespace stub::process {

using btstub::ErrorCode;
using btstub::make_error;

Expected<void> PtraceProcess::set_non_stop(bool on) {
  if (on == non_stop_) return {};
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  // Switched at connection time, with every thread stopped: a thread that
  // ran on would be stopped by no one in all-stop, or by everyone in non-stop.
  if (std::any_of(threads_.begin(), threads_.end(),
                  [](const auto& entry) { return entry.second.running || entry.second.deferred; })) {
    return make_error(ErrorCode::InvalidArgument, "Cannot switch between all-stop and non-stop while threads run");
  }
  // The tracer's int3s and emulated steps hold every thread (step_held);
  // non-stop with a recording is refused before it gets here (the session).
  if (on && recording()) {
    return make_error(ErrorCode::NotSupported, "Non-stop mode is not supported while branches are recorded");
  }
  non_stop_ = on;
  retired_user_int3s_.clear();
  return {};
}

Expected<void> PtraceProcess::stop_thread(pid_t tid) {
  if (!non_stop_) return make_error(ErrorCode::InvalidArgument, "Threads stop on their own only in non-stop mode");
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  auto found = threads_.find(tid);
  if (found == threads_.end()) return make_error(ErrorCode::NoProcess, "No thread " + std::to_string(tid));
  ThreadState& thread = found->second;
  if (thread.exited || !thread.running) return {};  // stopped already: its stop was reported
  thread.stop_requested = true;
  if (thread.sigstop_expected) return {};  // one is on its way already
  if (::syscall(SYS_tgkill, pid_, tid, SIGSTOP) != 0) {
    return make_error(ErrorCode::NoProcess, "Cannot stop thread " + std::to_string(tid) + ": " + std::strerror(errno));
  }
  thread.sigstop_expected = true;
  return {};
}

bool PtraceProcess::thread_running(pid_t tid) const {
  auto found = threads_.find(tid);
  if (!alive_ || found == threads_.end()) return false;
  return found->second.running || found->second.deferred.has_value();
}

}  // namespace stub::process
