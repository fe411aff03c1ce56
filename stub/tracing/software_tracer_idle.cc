// SoftwareTracer: which threads run code of the program, so that a program
// with several threads gets checkpoints (stub/tracing/checkpoints.h). A
// copy has one thread; it stands for the program while every other thread
// runs none of its code (stopped, or waiting in a futex or a sleep the
// tracer stepped it into: a step stops before any code after the wait), and
// for the copied thread's points up to where another one ran again.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "protocol/amd64_registers.h"
#include "stub/tracing/software_tracer.h"
#include "stub/tracing/software_tracer_internal.h"

namespace stub::tracing {

using protocol::Amd64Reg;
using namespace tracer_detail;

namespace {

constexpr uint64_t kSyscallSize = 2;
constexpr uint64_t kTimerAbstime = 1;  // TIMER_ABSTIME

// System calls that wait and write none of the program's memory while
// they do (a read's buffer, a wait's status would change under another
// thread's copy): futex waits, pause, sigsuspend, sleeps without a
// remainder to store.
bool waits_writing_nothing(const protocol::RegisterFile& regs, uint64_t number) {
  const uint64_t arg1 = regs.get_u64(Amd64Reg::rsi);
  switch (number) {
    case SYS_futex: {
      const uint64_t command = arg1 & ~uint64_t{FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME};
      return command == FUTEX_WAIT || command == FUTEX_WAIT_BITSET;
    }
#ifdef SYS_futex_waitv
    case SYS_futex_waitv:
#endif
    case SYS_pause:
    case SYS_rt_sigsuspend:
    case SYS_sched_yield: return true;
    case SYS_nanosleep: return arg1 == 0;
    case SYS_clock_nanosleep: return (arg1 & kTimerAbstime) != 0 || regs.get_u64(Amd64Reg::r10) == 0;
    default: return false;
  }
}

bool is_syscall_at(TracedThreadControl& control, uint64_t addr) {
  auto bytes = control.read_memory(addr, kSyscallSize);
  return bytes && bytes->size() == kSyscallSize && (*bytes)[0] == 0x0f && (*bytes)[1] == 0x05;
}

}  // namespace

void SoftwareTracer::note_stopped(pid_t tid) {
  if (ThreadState* t = state(tid)) t->runs_code = false;
}

void SoftwareTracer::note_verdict(TracedThreadControl& control, pid_t tid, TraceVerdict verdict) {
  // Absorbed while the process layer stops every thread, the thread stays
  // stopped (before_resume comes when it goes on).
  if (control.stopping_all()) return;
  if (verdict == TraceVerdict::Continue) note_resumed(control, tid, StepKind::Continue, 0);
  if (verdict == TraceVerdict::SingleStep) note_resumed(control, tid, StepKind::SingleStep, 0);
}

void SoftwareTracer::note_resumed(TracedThreadControl& control, pid_t tid, StepKind kind, int signal) {
  ThreadState* t = state(tid);
  if (t == nullptr) return;
  // A system call about to run under a step (every one the tracer lets
  // run): the barrier it makes gets the program's shared memory as it is
  // before the call, which may write there itself (a read into it).
  if (kind == StepKind::SingleStep && t->step && !t->step->shared_before && t->step->insn &&
      t->step->insn->kind == decoder::ControlKind::Syscall) {
    t->step->shared_before = shared_digest_due(control, tid);
  }
  if (!has_others(tid)) {
    t->runs_code = true;
    return;
  }
  if (kind == StepKind::SingleStep && signal == 0 && steps_into_wait(control, tid)) {
    t->runs_code = false;
    return;
  }
  t->runs_code = true;
  if (!checkpoints_) return;
  checkpoints_->others_run(tid, [&](pid_t other) -> std::optional<uint64_t> {
    const ThreadState* o = state(other);
    if (o == nullptr || !o->trace) return std::nullopt;
    return o->trace->end_sequence();
  });
}

bool SoftwareTracer::has_others(pid_t tid) const {
  for (const auto& [other, t] : threads_) {
    if (other != tid && !t.exited) return true;
  }
  return false;
}

std::vector<pid_t> SoftwareTracer::idle_others(pid_t tid) const {
  std::vector<pid_t> idle;
  for (const auto& [other, t] : threads_) {
    if (other != tid && !t.exited && !t.runs_code) idle.push_back(other);
  }
  return idle;
}

// Also one in a signal handler that interrupted it there: the clock read
// goes on after the handler returns (for a handler's few branches: one
// that never returns, by longjmp, does not hold copies back for long).
// Only a stopped thread can stand there (a running one's registers are not
// read).
bool SoftwareTracer::other_in_vdso(TracedThreadControl& control, pid_t tid) const {
  constexpr uint64_t kHandlerBranches = 10'000;
  for (const auto& [other, t] : threads_) {
    if (other == tid || t.exited) continue;
    if (t.vdso_interrupted && t.trace && t.trace->end_sequence() < *t.vdso_interrupted + kHandlerBranches) return true;
    if (t.runs_code) continue;
    auto regs = control.read_general_registers(other);
    if (regs && checkpoints_->in_vdso(pc_of(*regs))) return true;
  }
  return false;
}

std::optional<uint64_t> SoftwareTracer::restarted_call(TracedThreadControl& control,
                                                       const protocol::RegisterFile& regs) {
  const uint64_t pc = pc_of(regs);
  if (!in_restarted_call(regs) || pc < kSyscallSize || !is_syscall_at(control, pc - kSyscallSize)) {
    return std::nullopt;
  }
  return pc - kSyscallSize;
}

bool SoftwareTracer::steps_into_wait(TracedThreadControl& control, pid_t tid) {
  auto regs = control.read_general_registers(tid);
  if (!regs) return false;
  if (restarted_call(control, *regs)) return waits_writing_nothing(*regs, regs->get_u64(Amd64Reg::orig_rax));
  return is_syscall_at(control, pc_of(*regs)) && waits_writing_nothing(*regs, regs->get_u64(Amd64Reg::rax));
}

void SoftwareTracer::checkpoint_alone(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc) {
  if (!checkpoints_ || !t.trace || !has_others(tid)) return;
  // One that serves here already (the client steps on from it): no fork.
  if (checkpoints_->usable_for(tid, HistoryPoint{t.trace->end_sequence(), pc})) return;
  t.checkpoint_due = true;
  checkpoint_if_due(control, t, tid, pc);
}

}  // namespace stub::tracing
