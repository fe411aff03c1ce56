// SoftwareTracer: when to take checkpoints (stub/tracing/checkpoints.h).
#include "stub/tracing/software_tracer.h"

namespace stub::tracing {

void SoftwareTracer::set_checkpoint_limits(std::optional<Checkpoints::Limits> limits) {
  checkpoints_ = limits ? std::make_unique<Checkpoints>(*limits) : nullptr;
}

void SoftwareTracer::note_unrepeatable(ThreadState& t, pid_t tid, uint64_t pc) {
  if (!checkpoints_ || !t.trace) return;
  checkpoints_->barrier(tid, {t.trace->end_sequence(), pc});
  t.checkpoint_due = true;
}

bool SoftwareTracer::note_client_write(ThreadState& t, pid_t tid, uint64_t pc) {
  if (!t.client_wrote) return false;
  t.client_wrote = false;
  if (!checkpoints_ || !t.trace) return false;
  checkpoints_->client_write(tid, {t.trace->end_sequence(), pc});
  t.checkpoint_due = true;
  return true;
}

// At a stop of the thread's own (nothing pending: the trace holds all it
// ran before `pc`). Only under whole-program recording: gdb's record btrace
// replays on its side and never asks for values in the past.
void SoftwareTracer::checkpoint_if_due(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc) {
  if (!checkpoints_ || !all_enabled_ || !t.trace || t.frozen) return;
  const HistoryPoint at{t.trace->end_sequence(), pc};
  if (!t.checkpoint_due) {
    auto newest = checkpoints_->newest(tid);
    if (newest && at.sequence < newest->sequence + checkpoints_->spacing(recorded_branches(t))) return;
  }
  if (checkpoints_->vdso().second == 0) checkpoints_->set_vdso(read_vdso_range(tid));
  // A copy standing inside the vDSO would run the rest of it.
  if (checkpoints_->in_vdso(pc)) return;
  // Another thread running code now would run on where the copy does not:
  // the process layer refuses unless every other one is idle (or ended).
  auto copy = control.fork_copy(tid, idle_others(tid));
  if (!copy) return;  // stays due: e.g. another thread runs
  checkpoints_->add(tid, at, std::move(*copy));
  checkpoints_->drop_before(tid, t.trace->first_sequence());
  t.checkpoint_due = false;
}

}  // namespace stub::tracing
