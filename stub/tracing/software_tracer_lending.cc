// SoftwareTracer: lending a thread to the translating tracer
// (stub/tracing/translating_tracer.h), which runs it in translated code and
// hands its branches back, and taking it back where the translated code
// cannot go on. The trace, its checkpoints and its configuration stay here
// throughout, so everything built on them sees one history.
#include <algorithm>

#include "stub/tracing/software_tracer.h"
#include "stub/tracing/software_tracer_internal.h"

namespace stub::tracing {

using namespace tracer_detail;

bool SoftwareTracer::lend_thread(TracedThreadControl& control, pid_t tid) {
  ThreadState* t = traced_state(tid);
  if (t == nullptr || !t->enabled || t->frozen || t->stopped_full || t->disarm_pending || t->step || !t->trace) {
    return false;
  }
  auto regs = control.read_general_registers(tid);
  if (!regs) return false;
  const uint64_t pc = pc_of(*regs);
  ensure_origin(*t, pc);
  note_client_move(*t, pc);
  // Whatever a plan ran is stored before the thread goes (nothing, when
  // the plan was made at this very stop: the thread is before its entry).
  settle_lookahead(control, *t, tid, pc);
  settle(control, *t, tid, pc, false);
  if (t->frozen || t->stopped_full) return false;
  if (!arm(control, *t, tid, std::nullopt)) return false;
  // The first point of the history, or one after something re-execution
  // cannot repeat (a system call, the vDSO, a write of the client's): the
  // copy is taken here, where the thread still stands at an original pc.
  (void)note_client_write(*t, tid, pc);
  checkpoint_if_due(control, *t, tid, pc);
  return true;
}

bool SoftwareTracer::store_lent_branch(pid_t tid, uint64_t from, uint64_t to, const decoder::StackSnapshot& stack) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->trace || !t->enabled || t->frozen) return false;
  return store(*t, from, to, stack);
}

std::optional<std::size_t> SoftwareTracer::room_for_lent(pid_t tid) const {
  const ThreadState* t = state(tid);
  if (t == nullptr || !t->trace || t->trace->policy() != decoder::OverflowPolicy::Stop) return std::nullopt;
  return t->trace->room();
}

std::size_t SoftwareTracer::store_lent_branches(pid_t tid, std::span<const decoder::StackedBranch> branches,
                                               const std::shared_ptr<const void>& lender) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->trace || !t->enabled || t->frozen) return 0;
  // No branch here leaves the vDSO (store() checks each of its own for
  // one, to take a checkpoint after it): they come from translated code,
  // and the vDSO is never translated (translatable_code.h). The check
  // over every branch of a drained log was about 5% of the CPU the program
  // and this thread share.
  // In slices, each but the last ending one branch past a chunk, so that
  // the copy makes every whole chunk straight from it
  // (BlockTrace::append_stacked); a slice that ended at a chunk's end left
  // that chunk to be copied twice.
  constexpr std::size_t kChunk = decoder::BlockTrace::kChunkBranches;
  constexpr std::size_t kSliceChunks = 4;
  std::size_t stored = 0;
  if (lender) {
    // In one: its whole chunks go to the packer as one job.
    stored = t->trace->append_stacked(branches, lender);
  } else {
    while (stored < branches.size()) {
      const std::size_t open = t->trace->open_branches();
      const std::size_t length = open <= kChunk ? kSliceChunks * kChunk - open + 1 : kSliceChunks * kChunk;
      const std::span<const decoder::StackedBranch> slice =
          branches.subspan(stored, std::min(length, branches.size() - stored));
      const std::size_t done = t->trace->append_stacked(slice);
      stored += done;
      if (done < slice.size()) break;
    }
  }
  stats_.branches += stored;
  if (stored < branches.size()) {  // full under the stop policy: as store() does
    t->frozen = true;
    any_frozen_ = true;
    t->stopped_full = true;
  }
  return stored;
}

void SoftwareTracer::return_lent_memory(pid_t tid, const void* lender) {
  if (ThreadState* t = state(tid); t != nullptr && t->trace) t->trace->return_borrowed(lender);
}

bool SoftwareTracer::checkpoint_wanted(pid_t tid) const {
  const ThreadState* t = state(tid);
  if (!checkpoints_ || !all_enabled_ || t == nullptr || !t->trace || t->frozen) return false;
  if (t->checkpoint_due) return true;
  auto newest = checkpoints_->newest(tid);
  return !newest || t->trace->end_sequence() >= newest->sequence + checkpoints_->spacing(recorded_branches(*t));
}

TraceVerdict SoftwareTracer::take_back(TracedThreadControl& control, pid_t tid) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->enabled) return TraceVerdict::Continue;
  if (t->stopped_full) return TraceVerdict::ShowStop;
  if (t->frozen) return TraceVerdict::Continue;  // full and resumed anyway: runs on untraced
  if (t->trace) t->trace->collect_packed();
  ensure_code_map(control, tid);
  auto regs = control.read_general_registers(tid);
  if (!regs) return TraceVerdict::Report;
  checkpoint_if_due(control, *t, tid, pc_of(*regs));
  t->in_stop = true;
  const Next next = continue_from(control, *t, tid);
  t->in_stop = false;
  switch (next) {
    case Next::Continue: return TraceVerdict::Continue;
    case Next::SingleStep: return TraceVerdict::SingleStep;
    case Next::Report: return t->stopped_full ? TraceVerdict::ShowStop : TraceVerdict::Report;
    case Next::StopBeforeExit: return TraceVerdict::StopHere;
  }
  return TraceVerdict::Report;
}

}  // namespace stub::tracing
