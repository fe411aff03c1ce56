// SoftwareTracer: when to take checkpoints (stub/tracing/checkpoints.h).
#include "stub/tracing/software_tracer.h"

#include <sys/syscall.h>

#include "stub/process/repeated_call.h"
#include "stub/tracing/code_writes.h"
#include "stub/tracing/software_tracer_internal.h"

namespace stub::tracing {
namespace {

// How far a thread runs without copies once a flood of signals is seen: the
// default periodic spacing, so a flood costs at most the copies a quiet
// thread takes.
constexpr uint64_t kFloodBranches = 100'000;

}  // namespace

void SoftwareTracer::set_checkpoint_limits(std::optional<Checkpoints::Limits> limits) {
  checkpoints_ = limits ? std::make_unique<Checkpoints>(*limits) : nullptr;
}

void SoftwareTracer::note_unrepeatable(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc) {
  note_barrier(t, tid, pc, shared_digest_due(control, tid));
}

void SoftwareTracer::note_barrier(ThreadState& t, pid_t tid, uint64_t pc, std::optional<uint64_t> shared_digest) {
  if (!checkpoints_ || !t.trace) return;
  checkpoints_->barrier(tid, {t.trace->end_sequence(), pc}, shared_digest);
  t.checkpoint_due = true;
}

bool SoftwareTracer::note_repeated_call(ThreadState& t, pid_t tid, const decoder::Instruction& insn,
                                        const protocol::RegisterFile& regs) {
  // The two-byte `syscall` (int 0x80 and sysenter take other numbers),
  // stepped over completely.
  // Any other (int 0x80 numbers brk 45) may have moved the heap unseen.
  if (insn.size != 2 || insn.text.rfind("syscall", 0) != 0 || tracer_detail::pc_of(regs) != insn.next_address()) {
    forget_brk();
    return false;
  }
  const SystemCall call = system_call_of(regs);
  const long result = static_cast<long>(regs.get_u64(protocol::Amd64Reg::rax));
  // Where the heap ended before the call: known only while this thread is
  // the program's one, every thread is traced and no other process shares
  // the memory (known_brk_).
  const bool alone = all_enabled_ && !has_others(tid) && !heap_shared_;
  if (!alone) forget_brk();
  const std::optional<uint64_t> brk_before =
      known_brk_ && known_brk_->tid == tid ? std::optional<uint64_t>(known_brk_->end) : std::nullopt;
  if (call.number == SYS_brk && alone) known_brk_ = KnownBrk{tid, static_cast<uint64_t>(result)};
  if (!checkpoints_ || !t.trace) return false;
  auto repeatable = process::repeatable_call(insn.address, static_cast<long>(call.number), call.args, result, brk_before);
  if (!repeatable) return false;
  repeatable->r11 = regs.get_u64(protocol::Amd64Reg::r11);
  checkpoints_->repeated_call(tid, {t.trace->end_sequence(), insn.address}, *repeatable);
  return true;
}

// Only while the newest checkpoint holds shared memory and no barrier came
// since: a program that shares none pays nothing here.
std::optional<uint64_t> SoftwareTracer::shared_digest_due(TracedThreadControl& control, pid_t tid) const {
  if (!checkpoints_) return std::nullopt;
  const process::SharedRanges* ranges = checkpoints_->shared_ranges_due(tid);
  if (ranges == nullptr) return std::nullopt;
  return process::shared_memory_digest(
      *ranges, [&control](uint64_t addr, std::size_t len) { return control.read_memory(addr, len); });
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
  // A flood of signals (below): the copy stays due until the thread's own
  // code got on.
  if (recorded_branches(t) < t.copies_resume_at && checkpoints_->newest(tid)) return;
  if (checkpoints_->vdso().second == 0) checkpoints_->set_vdso(read_vdso_range(tid));
  // A copy standing inside the vDSO would run the rest of it.
  if (checkpoints_->in_vdso(pc)) return;
  // Nor while another thread stands in the vDSO: a clock read there goes
  // round again when the kernel's time moved on during it, and a copy every
  // few milliseconds (each thread's, at the resumes after a client's
  // breakpoint) kept it going round for good.
  if (other_in_vdso(control, tid)) return;
  // Another thread running code now would run on where the copy does not:
  // the process layer refuses unless every other one is idle (or ended).
  auto copy = control.fork_copy(tid, idle_others(tid));
  if (!copy) return;  // stays due: e.g. another thread runs
  checkpoints_->add(tid, at, std::move(*copy));
  checkpoints_->drop_before(tid, t.trace->first_sequence());
  t.checkpoint_due = false;
  // The thread's last signal came again while the copy was taken (an
  // interval timer faster than a copy, ~1 ms): each delivery and each
  // handler's return would get a copy of its own while the next signal
  // arrives, and the program would run nothing but its handlers. The
  // copies then wait for the thread's own branches; its past there is
  // what the history determines.
  if (t.last_delivered != 0 && control.signal_waits(tid, t.last_delivered)) {
    t.copies_resume_at = recorded_branches(t) + kFloodBranches;
  }
}

// A signal delivered where the thread's last handler returned, nothing run
// since: the next signal arrived while the last was handled (its delivery,
// the handler's copies, other threads' stops for the client's breakpoints
// in between), and the thread would run nothing but its handlers. Its
// copies then wait for its own branches, as where a signal came again
// while a copy was taken (checkpoint_if_due).
void SoftwareTracer::note_signal_flood(ThreadState& t, uint64_t pc) {
  if (!t.trace || t.handler_returned != HistoryPoint{t.trace->end_sequence(), pc}) return;
  t.copies_resume_at = recorded_branches(t) + kFloodBranches;
}

}  // namespace stub::tracing
