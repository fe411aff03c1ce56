#include "stub/tracing/software_tracer.h"
#include "stub/tracing/software_tracer_internal.h"

#include <sched.h>
#include <sys/syscall.h>

#include <csignal>
#include <cstring>

#include "decoder/branch_evaluator.h"
#include "protocol/amd64_registers.h"
#include "stub/tracing/code_writes.h"

namespace stub::tracing {

using protocol::Amd64Reg;
using namespace tracer_detail;

Expected<std::unique_ptr<SoftwareTracer>> SoftwareTracer::create(const TraceConfig& config, bool enable_all,
                                                                 TraceStops stops) {
  auto decoder = decoder::InstructionDecoder::create();
  if (!decoder) return decoder.error();
  return std::unique_ptr<SoftwareTracer>(
      new SoftwareTracer(BlockCache(std::move(decoder).value()), config, enable_all, stops));
}

SoftwareTracer::SoftwareTracer(BlockCache blocks, const TraceConfig& config, bool enable_all, TraceStops stops)
    : blocks_(std::move(blocks)),
      stops_(stops),
      config_(config),
      all_enabled_(enable_all),
      checkpoints_(std::make_unique<Checkpoints>()) {}

// ---------------------------------------------------------------- hook side

StepKind SoftwareTracer::before_resume(TracedThreadControl& control, pid_t tid, StepKind requested,
                                       int signal) {
  ensure_code_map(control, tid);
  const StepKind kind = plan_resume(control, tid, requested, signal);
  note_resumed(control, tid, kind, signal);
  return kind;
}

TraceVerdict SoftwareTracer::on_stop(TracedThreadControl& control, const TracedStop& stop) {
  note_stopped(stop.tid);
  ensure_code_map(control, stop.tid);
  const TraceVerdict verdict = judge_stop(control, stop);
  note_verdict(control, stop.tid, verdict);
  return verdict;
}

StepKind SoftwareTracer::plan_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) {
  if (ThreadState* t = state(tid); t != nullptr && t->disarm_pending) {
    arm(control, *t, tid, std::nullopt);
    t->disarm_pending = false;
  }
  update_kept_int3s(control);
  ThreadState* t = traced_state(tid);
  if (t == nullptr || !t->enabled) return requested;
  t->stopped_full = false;
  auto regs = control.read_general_registers(tid);
  if (!regs) return requested;  // the thread is going away; nothing to trace
  const uint64_t pc = pc_of(*regs);
  ensure_origin(*t, pc);
  note_client_move(*t, pc);
  // Whatever the thread did since its last stop is settled before anything
  // new is planned (e.g. a pending branch of a thread the process layer kept
  // stopped while stopping all threads did not run).
  settle_lookahead(control, *t, tid, pc);
  settle(control, *t, tid, pc, false);
  // The history's first point (recording started at this stop, by
  // `monitor record start` or at launch) needs a copy of its own: the
  // next trace stop is a branch later, and nothing before it could be
  // re-run.
  if (checkpoints_ && !t->frozen && !checkpoints_->newest(tid)) checkpoint_if_due(control, *t, tid, pc);
  // The same where the client wrote memory at this stop: what follows
  // holds its bytes, older copies do not.
  if (note_client_write(*t, tid, pc) && !t->frozen) checkpoint_if_due(control, *t, tid, pc);
  // A signal delivered now sends the thread where the history alone
  // cannot: no copy may run across it. The point just before it (often
  // right after the system call that sent it) gets a checkpoint first.
  if (signal != 0 && !t->frozen) {
    note_signal_flood(*t, pc);
    if (checkpoints_ && checkpoints_->in_vdso(pc) && t->trace) t->vdso_interrupted = t->trace->end_sequence();
    checkpoint_if_due(control, *t, tid, pc);
    t->last_delivered = signal;
    note_unrepeatable(control, *t, tid, pc);
    // Replay reports it here (the pc is the open block's last instruction
    // so far; the branch to a handler, if any, will end the block there).
    if (t->trace) t->trace->mark_signal(t->trace->end_sequence(), pc, signal);
  }
  // Stopped in a system call the kernel makes again (a futex wait an
  // all-stop interrupted): stepped, as every system call the tracer runs,
  // so its end is seen (a barrier, and where the thread runs code again).
  const uint64_t restart = signal == 0 ? restarted_call(control, *regs).value_or(0) : 0;  // 0: none
  if (restart == 0 && signal == 0 && !t->frozen) {
    // Due here: a fork's call ended at its event stop (settled above), not
    // at a trap of the step over it; its copy goes right after the call,
    // where a watch search looks for what the call wrote. Or one refused
    // at an earlier stop, taken now.
    if (t->checkpoint_due) checkpoint_if_due(control, *t, tid, pc);
    checkpoint_alone(control, *t, tid, pc);
  }
  // A debug-register trace stop fires before the instruction at its address
  // runs, unless the thread resumes from that very trap (the kernel then
  // sets RF). A thread that reached its armed address otherwise (a step
  // onto it) would stop there again at once, and a step of the client's
  // would look completed without having moved. Nothing below arms at the pc.
  if (stops_ == TraceStops::DebugRegister && t->armed.size() == 1 && t->armed.front() == pc) {
    arm(control, *t, tid, std::nullopt);
  }
  if (t->frozen) {
    arm(control, *t, tid, std::nullopt);
    return requested;
  }
  // A step: the client's; ours, to see where a signal takes the thread (its
  // handler's first instruction, recorded as interrupted pc -> handler); or
  // the process layer's, which steps off a user breakpoint under the pc
  // whatever we answer (and resumes the thread itself afterwards).
  const bool at_user_breakpoint = control.has_user_breakpoint(pc);
  if (requested == StepKind::SingleStep || signal != 0 || at_user_breakpoint) {
    ControlMemory code(control);
    auto insn = blocks_.instruction_at(pc, code);
    const bool branch = insn && predicts_branch(*insn, *regs, code);
    const bool by_tracer = requested != StepKind::SingleStep && !at_user_breakpoint;
    t->step = Step{pc, stack_of(*regs), std::move(insn), branch, by_tracer, std::nullopt, std::nullopt};
    if (by_tracer) ++stats_.steps;
    return signal != 0 ? StepKind::SingleStep : requested;
  }
  if (restart != 0) {
    ControlMemory code(control);
    t->step = Step{restart, stack_of(*regs), blocks_.instruction_at(restart, code), false, true, std::nullopt, std::nullopt};
    ++stats_.steps;
    return StepKind::SingleStep;
  }
  switch (continue_from(control, *t, tid)) {
    case Next::SingleStep: return StepKind::SingleStep;
    case Next::Continue: return StepKind::Continue;
    case Next::Report: break;
    case Next::StopBeforeExit: break;  // never at a resume (in_stop is false)
  }
  // Only a full buffer under the stop policy refuses here: the client saw
  // that stop and resumed anyway, so the thread runs on untraced.
  t->frozen = true;
  any_frozen_ = true;
  update_kept_int3s(control);
  t->stopped_full = false;
  arm(control, *t, tid, std::nullopt);
  return requested;
}

TraceVerdict SoftwareTracer::judge_stop(TracedThreadControl& control, const TracedStop& stop) {
  update_kept_int3s(control);
  ThreadState* t = traced_state(stop.tid);
  const bool only_trace_stop = stop.trace_stop_hit && !stop.software_breakpoint && !stop.watchpoint_hit &&
                               !stop.single_stepped && stop.signal == SIGTRAP;
  if (t == nullptr) return TraceVerdict::Report;
  ++stats_.stops;
  if (t->trace) t->trace->collect_packed();  // segments the packer finished
  if (t->disarm_pending || !t->enabled || t->frozen) {
    // A trace stop armed before tracing ended: swallow it, never show it.
    arm(control, *t, stop.tid, std::nullopt);
    t->disarm_pending = false;
    if (!only_trace_stop) return TraceVerdict::Report;
    ++stats_.absorbed;
    // An int3 (maybe another thread's) is still under the pc: get past it.
    if (stops_ == TraceStops::Breakpoint && !pass_trace_breakpoint(control, stop.tid)) {
      return TraceVerdict::SingleStep;
    }
    return TraceVerdict::Continue;
  }
  ensure_origin(*t, stop.pc);
  const bool tracer_step = stop.single_stepped && t->step && t->step->by_tracer;
  const bool stepped_call = tracer_step && t->step->insn && t->step->insn->kind == decoder::ControlKind::Syscall;
  settle_lookahead(control, *t, stop.tid, stop.pc);
  settle(control, *t, stop.tid, stop.pc, stop.single_stepped);
  if (t->stopped_full) return TraceVerdict::ShowStop;
  if (stepped_call && stop.signal == SIGTRAP) {
    if (auto restart = step_over_restart(control, *t, stop.tid)) return *restart;
  }
  const bool ours = stop.signal == SIGTRAP && !stop.software_breakpoint && !stop.watchpoint_hit &&
                    (tracer_step || (stop.trace_stop_hit && !stop.single_stepped));
  // Everything before the pc is in the trace now: a point a copy can stand
  // at (also where the client's own step over a system call ended).
  const bool clients_step = stop.single_stepped && stop.signal == SIGTRAP && !tracer_step &&
                            !stop.software_breakpoint && !stop.watchpoint_hit;
  if (ours || clients_step) checkpoint_if_due(control, *t, stop.tid, stop.pc);
  if (!ours) return TraceVerdict::Report;
  if (stop.trace_stop_hit) ++stats_.trace_stops;
  t->in_stop = true;
  const Next next = continue_from(control, *t, stop.tid);
  t->in_stop = false;
  switch (next) {
    case Next::Continue: ++stats_.absorbed; return TraceVerdict::Continue;
    case Next::SingleStep: ++stats_.absorbed; return TraceVerdict::SingleStep;
    case Next::Report: break;
    case Next::StopBeforeExit: return TraceVerdict::StopHere;
  }
  return t->stopped_full ? TraceVerdict::ShowStop : TraceVerdict::Report;
}

// The trap of a step over a system call comes as the call returns, before
// the kernel handles what interrupted it: a stop of every thread (all-stop,
// a checkpoint) makes a nanosleep or futex wait return a restart code, and
// the SIGSTOP is reported after the trap. The kernel then makes the call
// again when the thread resumes, moving the pc back from where it stands
// onto the `syscall`: the thread must not go on from there (a transfer
// emulated past it lands two bytes before its target). It is stepped over
// the restart, as a resume does (on_resume).
std::optional<TraceVerdict> SoftwareTracer::step_over_restart(TracedThreadControl& control, ThreadState& t,
                                                              pid_t tid) {
  auto regs = control.read_general_registers(tid);
  if (!regs) return std::nullopt;
  const std::optional<uint64_t> restart = restarted_call(control, *regs);
  if (!restart) return std::nullopt;
  ControlMemory code(control);
  t.step = Step{*restart, stack_of(*regs), blocks_.instruction_at(*restart, code), false, true, std::nullopt,
                std::nullopt};
  ++stats_.steps;
  ++stats_.absorbed;
  return TraceVerdict::SingleStep;
}

void SoftwareTracer::note_client_move(ThreadState& t, uint64_t pc) {
  if (!t.moved_from) return;
  const auto [from, stack] = *t.moved_from;
  t.moved_from.reset();
  if (from == pc || !t.trace || !t.enabled || t.frozen) return;
  t.pending.reset();
  t.step.reset();
  t.lookahead.reset();
  (void)store(t, from, pc, stack);
}

// Whether the stepped `syscall` ran: the step completed, or the thread
// stopped past it before the step's trap (a fork's or vfork's event stop,
// which the client hears of; a signal that came during the call). Not a
// call the kernel makes again when the thread resumes (a restart code in
// rax): nothing of it is done, and the step over its restart sees it.
namespace {
bool system_call_made(const Expected<protocol::RegisterFile>& regs, uint64_t after_call, uint64_t pc,
                      bool step_completed) {
  // A step's trap comes as the call returns, before the kernel turns a
  // restart code into a restart: at after_call with one, the call is undone
  // even where the step completed.
  if (pc == after_call && regs && in_restarted_call(*regs)) return false;
  if (step_completed) return true;
  return pc == after_call && regs;
}
// clone/clone3 making a process (not a thread, not a vfork child) that
// shares the memory. clone3's flags are read from its argument block;
// unreadable counts as shared.
bool shares_memory_apart(TracedThreadControl& control, const SystemCall& call) {
  uint64_t flags = call.args[0];
  if (call.number == SYS_clone3) {
    auto bytes = control.read_memory(call.args[0], sizeof flags);
    if (!bytes || bytes->size() < sizeof flags) return true;
    std::memcpy(&flags, bytes->data(), sizeof flags);
  } else if (call.number != SYS_clone) {
    return false;
  }
  return (flags & CLONE_VM) != 0 && (flags & (CLONE_THREAD | CLONE_VFORK)) == 0;
}

}  // namespace

// What happened since the thread last resumed, judged from where it is now.
void SoftwareTracer::settle(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc, bool step_completed) {
  if (t.step) {
    const Step& s = *t.step;
    if (s.insn && step_completed && reads_unrepeatable_value(*s.insn)) note_unrepeatable(control, t, tid, s.from);
    if (s.untraced_flags) (void)write_clone_flags(control, tid, *s.untraced_flags);  // the program's again
    if (s.insn && s.insn->kind == decoder::ControlKind::Syscall) {
      // Read once: whether the call was made, what it was, what it returned.
      const auto regs = control.read_general_registers(tid);
      if (system_call_made(regs, s.insn->next_address(), pc, step_completed)) {
        // Stopped by a signal as the call returned: what it did is not
        // judged, and a brk among such calls moved the heap unseen.
        const bool seen_whole = step_completed && regs;
        if (!seen_whole) forget_brk();
        if (!(seen_whole && note_repeated_call(t, tid, *s.insn, *regs))) {
          note_barrier(t, tid, s.from, s.shared_before);
        }
        if (regs) after_system_call(control, tid, *regs);
      }
    }
    bool record = false;
    if (!s.insn) {
      // Undecodable: only a landing clearly away from it counts as a branch.
      record = step_completed && (pc < s.from || pc > s.from + decoder::kMaxInstructionSize);
    } else if (step_completed && s.insn->kind == decoder::ControlKind::Other && s.insn->target &&
               pc != s.insn->next_address()) {
      settle_abort(control, t, s, pc);
    } else if (step_completed) {
      // pc == from without a predicted branch is a rep-string iteration;
      // elsewhere, a transfer or a signal's delivery. But under some
      // hypervisors a step over cpuid loses its trap and stops one
      // instruction further: that is no branch.
      record = s.predicted_branch ||
               (pc != s.insn->next_address() && pc != s.from && s.insn->text != "cpuid");
    } else {
      // Stopped by a signal instead: before the instruction (pc == from) or
      // in an interrupted syscall (pc after it); neither is a branch.
      record = pc != s.from && pc != s.insn->next_address();
    }
    if (record) store(t, s.from, pc, s.stack);
    // A system call that went elsewhere: rt_sigreturn, back where a signal
    // interrupted the thread (an execve starts a new history).
    if (record && step_completed && s.insn && s.insn->kind == decoder::ControlKind::Syscall && t.trace) {
      t.handler_returned = HistoryPoint{t.trace->end_sequence(), pc};
      t.vdso_interrupted.reset();
    }
    t.step.reset();
  }
  if (t.pending) {
    // The thread can be back at the branch only if the branch has not run:
    // one-block loops, where it could also have gone round, are stepped.
    if (pc != t.pending->from) store(t, t.pending->from, t.pending->to, t.pending_stack);
    t.pending.reset();
  }
}

// A step over xbegin that did not fall through: the transaction aborted
// (on CPUs with TSX turned off, every xbegin does) and went to its
// fallback. Some hypervisors lose the step's trap there, as over cpuid,
// and stop after the fallback's first instruction: that instruction ran
// unseen, and whether it was a branch is read from the code.
void SoftwareTracer::settle_abort(TracedThreadControl& control, ThreadState& t, const Step& s, uint64_t pc) {
  const uint64_t fallback = *s.insn->target;
  if (!store(t, s.from, fallback, s.stack) || pc == fallback) return;
  ControlMemory code(control);
  const auto first = blocks_.instruction_at(fallback, code);
  if (first && !first->is_control_transfer() && first->next_address() == pc) return;  // ran in line
  if (first && first->is_control_transfer() && pc != first->next_address()) {
    (void)store(t, fallback, pc, s.stack);
    return;
  }
  // Neither: what ran between the fallback and pc is unknown: a gap, as
  // the hardware backends mark lost branches.
  (void)store(t, decoder::kGapAddress, pc, s.stack);
}

std::string SoftwareTracer::activity() const {
  const Stats& s = stats_;
  return "Ptrace tracer: " + std::to_string(s.stops) + " stops of traced threads (" + std::to_string(s.trace_stops) +
         " at trace stops, " + std::to_string(s.absorbed) + " absorbed), " + std::to_string(s.steps) +
         " single steps of its own, " + std::to_string(s.emulated) + " transfers emulated, " +
         std::to_string(s.looked_past) + " run past without a stop; " + std::to_string(s.branches) +
         " branches stored.\n";
}

bool SoftwareTracer::store(ThreadState& t, uint64_t from, uint64_t to, const decoder::StackSnapshot& stack) {
  const uint64_t seq = t.trace->end_sequence();
  const std::optional<uint64_t> ran = code_ran(t, from);
  if (!t.trace->append(from, to, stack)) {
    t.frozen = true;
    any_frozen_ = true;
    t.stopped_full = true;
    return false;
  }
  ++stats_.branches;
  if (ran) t.trace->note_block_code(seq, *ran);
  if (checkpoints_ && checkpoints_->leaves_vdso(from, to)) t.checkpoint_due = true;
  return true;
}

std::optional<uint64_t> SoftwareTracer::code_ran(const ThreadState& t, uint64_t from) {
  // Told by where the block ends (a block runs within one mapping): the
  // branches of other code pay one search.
  if (from == decoder::kGapAddress || !meets(changeable_code_, from, from + 1) || control_ == nullptr) {
    return std::nullopt;
  }
  const uint64_t begin = t.trace->open_block_begin();
  if (begin == decoder::kGapAddress || from < begin) return std::nullopt;
  ControlMemory code(*control_);
  return blocks_.layout_hash({begin, from}, code);
}

bool SoftwareTracer::refuses_more(const ThreadState& t) const {
  return t.trace->policy() == decoder::OverflowPolicy::Stop && t.trace->full();
}

SoftwareTracer::Next SoftwareTracer::continue_from(TracedThreadControl& control, ThreadState& t, pid_t tid) {
  const Next next = plan_from(control, t, tid);
  // Every system call the tracer runs is a step of its `syscall`.
  if (next == Next::SingleStep && t.step && t.step->insn && t.step->insn->kind == decoder::ControlKind::Syscall &&
      !t.step->untraced_flags) {
    if (auto regs = control.read_general_registers(tid)) t.step->untraced_flags = traced_clone(control, tid, *regs);
  }
  return next;
}

SoftwareTracer::Next SoftwareTracer::plan_from(TracedThreadControl& control, ThreadState& t, pid_t tid) {
  auto regs = control.read_general_registers(tid);
  if (!regs) return Next::Report;
  const uint64_t pc = pc_of(*regs);
  if (stops_ == TraceStops::SingleStep) return step_one(control, t, *regs);
  if (stops_ == TraceStops::Breakpoint) return continue_by_emulation(control, t, tid, std::move(*regs));
  ControlMemory code(control);
  const BlockEnd end = blocks_.block_end(pc, code);
  if (end.address == pc) {
    if (end.kind == BlockEnd::Kind::Undecodable) return step_over(t, *regs, std::nullopt, false);
    if (end.kind == BlockEnd::Kind::Unrepeatable) return step_over(t, *regs, end.insn, false);
    return at_transfer(control, t, tid, *regs, end.insn);
  }
  // Arming at the thread's own pc is avoided above: whether a fresh
  // execution breakpoint fires before the instruction under the pc depends
  // on RF, which we do not control.
  if (!arm(control, t, tid, end.address)) return step_one(control, t, *regs);
  return Next::Continue;
}

// One instruction under a step, its outcome predicted for settle().
SoftwareTracer::Next SoftwareTracer::step_one(TracedThreadControl& control, ThreadState& t,
                                              const protocol::RegisterFile& regs) {
  ControlMemory code(control);
  // A user breakpoint's int3 under the pc stops the thread at once.
  if (control.has_user_breakpoint(pc_of(regs))) return Next::Continue;
  auto insn = blocks_.instruction_at(pc_of(regs), code);
  if (insn && stops_before(t, *insn, regs)) return Next::StopBeforeExit;
  const bool branch = insn && predicts_branch(*insn, regs, code);
  // Full: stopped before a transfer that may branch, as at_transfer and
  // continue_by_emulation stop (a jcc or loop seen not taken is no branch).
  const bool not_taken = !branch && insn &&
                         (insn->kind == decoder::ControlKind::ConditionalJump || insn->kind == decoder::ControlKind::Loop);
  if (insn && insn->is_control_transfer() && !not_taken && refuses_more(t)) return full_stop(t);
  return step_over(t, regs, std::move(insn), branch);
}

// The thread is about to run `insn` (a control transfer, or a checkpoint).
SoftwareTracer::Next SoftwareTracer::at_transfer(TracedThreadControl& control, ThreadState& t, pid_t tid,
                                                 const protocol::RegisterFile& regs,
                                                 const decoder::Instruction& insn) {
  const uint64_t pc = insn.address;
  // A user breakpoint's int3 stops the thread before the instruction runs;
  // that stop is the client's, and the next resume starts afresh. So does
  // a hardware breakpoint where take_transfer moved the thread (RF clear).
  if (control.has_user_breakpoint(pc) || (taken_in_a_row_ > 0 && control.hw_breakpoint_at(pc))) {
    return Next::Continue;
  }
  ControlMemory code(control);
  auto view = register_view(regs);
  auto next = decoder::next_pc(insn, view, code);
  if (!next) {
    // Unpredictable (far transfer, unreadable pointer...): watch it happen.
    if (refuses_more(t)) return full_stop(t);
    return step_over(t, regs, insn, false);
  }
  switch (next->kind) {
    case decoder::NextKind::FallThrough: {
      const BlockEnd end = blocks_.block_end(insn.next_address(), code);
      if (!arm(control, t, tid, end.address)) return step_over(t, regs, insn, false);
      return Next::Continue;
    }
    case decoder::NextKind::Branch: {
      if (refuses_more(t)) return full_stop(t);
      if (target_in_memory(insn)) return take_transfer(control, t, tid, regs, insn);
      const BlockEnd end = blocks_.block_end(next->target, code);
      if (end.address == pc || !arm(control, t, tid, end.address)) return step_over(t, regs, insn, true);
      t.pending = decoder::Branch{pc, next->target};
      t.pending_stack = stack_of(regs);
      return Next::Continue;
    }
    case decoder::NextKind::Syscall:
      if (stops_before(t, insn, regs)) return Next::StopBeforeExit;
      // rt_sigreturn, execve and friends go where the kernel decides.
      if (refuses_more(t)) return full_stop(t);
      return step_over(t, regs, insn, false);
    case decoder::NextKind::Stop:
      break;
  }
  return Next::Continue;  // int3/ud2/hlt: the signal stop reports itself
}

// Emulated (rip, rsp, a pushed return address), the branch is certain and
// stored at once; the thread goes on from the target as from any stop (a
// return landing on `jmp *GOT` takes that one too, up to kMaxTakenInARow).
// Where the emulation cannot be made (it would fault), the real
// instruction runs under a step, whose landing is the branch.
SoftwareTracer::Next SoftwareTracer::take_transfer(TracedThreadControl& control, ThreadState& t, pid_t tid,
                                                   protocol::RegisterFile regs, const decoder::Instruction& insn) {
  const uint64_t pc = insn.address;
  const decoder::StackSnapshot stack = stack_of(regs);
  uint64_t target = 0;
  bool taken = false;
  if (taken_in_a_row_ >= kMaxTakenInARow || !emulate(control, tid, regs, insn, target, taken)) {
    return step_over(t, regs, insn, true);
  }
  if (!write_transfer(control, tid, regs)) return Next::Report;
  if (taken && !store(t, pc, target, stack)) return Next::Report;  // full: stopped_full is set
  ++taken_in_a_row_;
  const Next next = continue_from(control, t, tid);
  --taken_in_a_row_;
  return next;
}

bool SoftwareTracer::stops_before(ThreadState& t, const decoder::Instruction& insn,
                                  const protocol::RegisterFile& regs) {
  constexpr uint64_t kExitGroup = 231;  // x86-64 __NR_exit_group
  const uint64_t pc = pc_of(regs);
  if (!all_enabled_ || !t.in_stop || t.frozen || t.exit_reported == pc) return false;
  if (insn.kind != decoder::ControlKind::Syscall || insn.text.rfind("syscall", 0) != 0) return false;
  if (regs.get_u64(Amd64Reg::rax) != kExitGroup) return false;
  t.exit_reported = pc;
  return true;
}

std::optional<SoftwareTracer::Step::ClonedFlags> SoftwareTracer::traced_clone(TracedThreadControl& control,
                                                                            pid_t tid,
                                                                            const protocol::RegisterFile& regs) {
  const uint64_t number = regs.get_u64(Amd64Reg::rax);
  if (number != SYS_clone && number != SYS_clone3) return std::nullopt;
  // clone takes its flags in rdi, clone3 in the block rdi points at.
  const uint64_t at = number == SYS_clone3 ? regs.get_u64(Amd64Reg::rdi) : 0;
  uint64_t flags = regs.get_u64(Amd64Reg::rdi);
  if (at != 0) {
    auto bytes = control.read_memory(at, sizeof flags);
    if (!bytes || bytes->size() < sizeof flags) return std::nullopt;
    std::memcpy(&flags, bytes->data(), sizeof flags);
  }
  constexpr uint64_t kUntracedVm = CLONE_UNTRACED | CLONE_VM;
  if ((flags & kUntracedVm) != kUntracedVm) return std::nullopt;
  const Step::ClonedFlags given{flags, at};
  if (!write_clone_flags(control, tid, Step::ClonedFlags{flags & ~uint64_t{CLONE_UNTRACED}, at})) return std::nullopt;
  return given;
}

bool SoftwareTracer::write_clone_flags(TracedThreadControl& control, pid_t tid, const Step::ClonedFlags& flags) {
  if (flags.at == 0) {
    protocol::RegisterFile regs;
    regs.set_u64(Amd64Reg::rdi, flags.flags);
    return control.write_registers(tid, regs).ok();
  }
  std::vector<uint8_t> bytes(sizeof flags.flags);
  std::memcpy(bytes.data(), &flags.flags, sizeof flags.flags);
  return control.write_memory(flags.at, bytes).ok();
}

SoftwareTracer::Next SoftwareTracer::full_stop(ThreadState& t) {
  t.stopped_full = true;
  return Next::Report;
}

SoftwareTracer::Next SoftwareTracer::step_over(ThreadState& t, const protocol::RegisterFile& regs,
                                               std::optional<decoder::Instruction> insn,
                                               bool predicted_branch) {
  t.step = Step{pc_of(regs), stack_of(regs), std::move(insn), predicted_branch, true, std::nullopt, std::nullopt};
  ++stats_.steps;
  return Next::SingleStep;
}

void SoftwareTracer::update_kept_int3s(TracedThreadControl& control) const {
  // With every thread traced, each int3 a thread meets is at the end of its
  // block (int3s sit only on emulable transfers), so an int3 left behind is
  // simply the next stop of whichever thread comes by: no write per stop.
  control.keep_trace_breakpoints(stops_ == TraceStops::Breakpoint && !any_frozen_ && !untraced_met_ &&
                                 every_thread_traced());
}

// Per-thread tracing (gdb's record btrace) counts too when no thread we
// know of is left out. A thread we never heard of (the main thread before
// anything was enabled on it) shows itself by meeting a kept int3:
// pass_trace_breakpoint then sets untraced_met_.
bool SoftwareTracer::every_thread_traced() const {
  if (all_enabled_) return true;
  bool any = false;
  for (const auto& [tid, t] : threads_) {
    if (t.exited) continue;
    if (!t.enabled || t.frozen) return false;
    any = true;
  }
  return any;
}

bool SoftwareTracer::arm(TracedThreadControl& control, ThreadState& t, pid_t tid,
                         std::optional<uint64_t> addr) {
  std::vector<uint64_t> addrs;
  if (addr) addrs.push_back(*addr);
  return arm_all(control, t, tid, addrs);
}

bool SoftwareTracer::arm_all(TracedThreadControl& control, ThreadState& t, pid_t tid,
                             const std::vector<uint64_t>& addrs) {
  if (t.armed == addrs) return true;
  for (uint64_t addr : addrs) {
    if (meets(writable_code_, addr, addr + 1)) return false;  // stepped instead
  }
  Expected<void> set;
  if (stops_ == TraceStops::Breakpoint) {
    set = control.set_trace_breakpoints(tid, addrs);
  } else if (addrs.size() > 1) {
    return false;  // one debug-register slot
  } else {
    set = control.set_trace_stop(tid, addrs.empty() ? std::nullopt : std::optional<uint64_t>(addrs[0]));
  }
  if (!set) return false;  // the old setting stays
  t.armed = addrs;
  return true;
}

void SoftwareTracer::after_system_call(TracedThreadControl& control, pid_t tid, const protocol::RegisterFile& regs) {
  const SystemCall call = system_call_of(regs);
  // A child that shares the memory (vfork, posix_spawn's clone) moves the
  // heap unseen: a vfork child only until its parent returns here, one
  // that is neither thread nor vfork child for as long as both live.
  if (call.number == SYS_vfork || call.number == SYS_clone || call.number == SYS_clone3) {
    forget_brk();
    if (shares_memory_apart(control, call)) heap_shared_ = true;
  }
  const CodeWrite write = code_write_in(tid, call);
  note_map_changes(tid, call, regs.get_u64(protocol::Amd64Reg::rax), write);
  if (system_call_observer_) system_call_observer_(call, write);
  if (may_map_changeable_code(call)) {
    code_map_stale_ = true;
    ensure_code_map(control, tid);
  }
  uint64_t begin = 0;
  uint64_t end = UINT64_MAX;
  switch (write.kind) {
    case CodeWrite::Kind::None: return;
    case CodeWrite::Kind::Anything: break;
    case CodeWrite::Kind::Range:
      begin = write.begin;
      end = write.end;
      break;
    case CodeWrite::Kind::Descriptor:
      // A file's new bytes never show where an int3 made the page the
      // program's own copy; only its memory file stores there.
      if (!writes_process_memory(write)) return;
      break;
  }
  control.code_changed(begin, end);
  if (blocks_.read_code_in(begin, end)) forget_code();
}

void SoftwareTracer::note_map_changes(pid_t tid, const SystemCall& call, uint64_t result, const CodeWrite& write) {
  const ThreadState* t = state(tid);
  const uint64_t sequence = t != nullptr && t->trace ? t->trace->end_sequence() : 0;
  const auto ranges = mapping_changes_of(call, result, write);
  if (ranges.empty()) return;
  std::vector<pid_t> others;
  for (const auto& [other, state] : threads_) {
    if (other != tid && state.trace) others.push_back(other);
  }
  for (const auto& [begin, end] : ranges) map_changes_.note(begin, end, tid, sequence, others);
}

void SoftwareTracer::client_wrote(uint64_t begin, uint64_t end) {
  if (blocks_.read_code_in(begin, end)) forget_code();
  // All-stop: every thread stands at its trace's end.
  std::vector<std::pair<pid_t, uint64_t>> stopped;
  for (auto& [tid, t] : threads_) {
    if (!t.trace) continue;
    stopped.emplace_back(tid, t.trace->end_sequence());
    t.client_wrote = true;
  }
  map_changes_.note_stopped(begin, end, stopped);
}

void SoftwareTracer::client_wrote_registers(pid_t tid, uint64_t pc_before, const decoder::StackSnapshot& stack_before) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->trace) return;
  t->client_wrote = true;
  if (!t->moved_from) t->moved_from.emplace(pc_before, stack_before);
}

void SoftwareTracer::ensure_code_map(TracedThreadControl& control, pid_t tid) {
  if (!code_map_stale_) return;
  const std::optional<std::string> maps = control.maps_text(tid);
  if (!maps) return;  // not readable now: again at the next stop
  code_map_stale_ = false;
  changeable_code_ = changeable_code(*maps);
  AddressRanges now = writable_code(*maps);
  if (now == writable_code_) return;
  writable_code_ = std::move(now);
  forget_code();  // plans and blocks decoded from bytes that may change now
  blocks_.set_uncached(writable_code_);
  for (const auto& [begin, end] : writable_code_) control.lift_trace_breakpoints(begin, end);
}

void SoftwareTracer::forget_code() {
  blocks_.invalidate();
  plans_.clear();
  passed_.clear();
  must_stop_.clear();
}

}  // namespace stub::tracing
