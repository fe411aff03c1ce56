// PtraceProcess::fork_copy: a checkpoint of the recorded program
// (stub/process/process_copy.h).
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <iterator>
#include <map>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

Expected<std::unique_ptr<ProcessCopy>> PtraceProcess::fork_copy(pid_t tid) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  // An attached program's copy would be its parent's child, not ours.
  if (attached_) return make_error(ErrorCode::NotSupported, "No copies of an attached program");
  if (ending_) return make_error(ErrorCode::NotSupported, "The program has ended");
  if (threads_.size() != 1) reap_ended_threads(tid);
  if (threads_.size() != 1 || threads_.count(tid) == 0) {
    return make_error(ErrorCode::NotSupported, "No copies of a program with several threads");
  }
  ThreadState& thread = threads_.at(tid);
  if (thread.running) return make_error(ErrorCode::InvalidArgument, "The thread is running");
  // A signal waiting would stop the injected clone first, and belongs to
  // the client's next stop: no copy now.
  if (auto waiting = signal_waiting(tid); !waiting || *waiting || thread.pending) {
    return make_error(ErrorCode::NotSupported, "A signal is on its way to the program");
  }
  // The stop may be a signal's, delivered when the thread resumes: the
  // injected clone ends in a trap stop of its own, so the signal's siginfo
  // is put back for that delivery.
  auto siginfo = read_siginfo(tid);
  int ended = -1;
  auto injected = inject_clone(tid, &ended);
  if (ended != -1) {
    // Killed from outside while being copied: its end was reaped on the
    // way, so it is reported from here (the next wait would find nothing).
    if (auto event = handle_status(tid, ended)) ended_while_stopping_ = event;
    return injected.error();
  }
  if (siginfo) (void)write_siginfo(tid, *siginfo);
  if (!injected) return injected.error();
  // One that came during the clone anyway is sent again, to be seen as if
  // it came just after (its sender is then btstub).
  for (int signal : injected->signals_met) requeue_signal(tid, signal);
  auto copy = ProcessCopy::adopt(injected->child);
  // A copy must never read a new time stamp counter value where the
  // program read another: its reads fault, and a re-run stops there
  // (copies forked from it inherit this). The tracer takes a checkpoint
  // after each of the program's reads, so a copy should never meet one.
  auto trapped = inject_syscall(copy->pid(), SYS_prctl, {PR_SET_TSC, PR_TSC_SIGSEGV});
  if (!trapped || trapped->result != 0) {
    return make_error(ErrorCode::Internal, "Cannot make the copy's time stamp counter reads fault");
  }
  // The copy runs without us watching its int3s: it gets the program's
  // bytes, when first used (most checkpoints never are).
  copy->owe_bytes(inserted_int3s());
  return copy;
}

}  // namespace stub::process
