// SoftwareTracer, TraceStops::Breakpoint: running a conditional branch
// without a stop of its own. A stop at every jcc would be one per taken or
// not-taken branch; instead the ends of the two blocks it leads to are armed
// (both are emulable transfers, so int3 sites anyway), and where the thread
// next stops tells which way the branch went. That is exact because the
// blocks [taken_to, taken_end] and [fall_to, fall_end] are disjoint, hold no
// other transfer, and neither contains the branch (else a one-block loop
// could go round unseen): any stop inside one of them, whatever its cause
// (trace int3, user breakpoint, signal, all-stop), says the branch ran and
// which way.
//
// A taken branch is stored with rsp/rbp as they were at the branch, which
// the stop no longer shows: the taken block may only push, pop or add to
// rsp and must leave rbp alone (BlockEnd::rsp_delta), so they follow
// backwards from the stop's registers.
#include "stub/software_tracer.h"
#include "stub/software_tracer_internal.h"

namespace stub {

using namespace tracer_detail;

namespace {

bool int3_site(const BlockEnd& end) { return end.kind == BlockEnd::Kind::Transfer && emulable(end.insn); }

}  // namespace

// Decided once per branch (see look_past_): a branch whose outcome blocks
// end at another looked-past branch would get an int3 there after all.
bool SoftwareTracer::may_look_past(const decoder::Instruction& jcc, decoder::CodeReader& code) {
  if (auto known = look_past_.find(jcc.address); known != look_past_.end()) return known->second;
  bool ok = false;
  if (jcc.kind == decoder::ControlKind::ConditionalJump && jcc.target && emulable(jcc) &&
      must_stop_.count(jcc.address) == 0) {
    const BlockEnd taken = blocks_.block_end(*jcc.target, code);  // copies: block_end may rehash
    const BlockEnd fall = blocks_.block_end(jcc.next_address(), code);
    auto looked_past = [&](uint64_t addr) {
      auto it = look_past_.find(addr);
      return it != look_past_.end() && it->second;
    };
    ok = int3_site(taken) && int3_site(fall) && taken.address != fall.address && taken.address != jcc.address &&
         fall.address != jcc.address && taken.rsp_delta && !looked_past(taken.address) &&
         !looked_past(fall.address);
    if (ok) {
      must_stop_.insert(taken.address);
      must_stop_.insert(fall.address);
    }
  }
  look_past_[jcc.address] = ok;
  return ok;
}

bool SoftwareTracer::arm_past(TracedThreadControl& control, ThreadState& t, pid_t tid,
                              const decoder::Instruction& jcc) {
  if (stops_ != TraceStops::Breakpoint || !t.trace) return false;
  // Under the stop policy the branch must fit before it runs: it is stored
  // only at the next stop, with no chance to stop the thread before it.
  if (t.trace->policy() == decoder::OverflowPolicy::Stop && t.trace->size() + 1 >= t.trace->capacity()) {
    return false;
  }
  ControlMemory code(control);
  if (!may_look_past(jcc, code)) return false;
  const uint64_t taken_end = blocks_.block_end(*jcc.target, code).address;
  const uint64_t fall_end = blocks_.block_end(jcc.next_address(), code).address;
  if (!arm_all(control, t, tid, {taken_end, fall_end})) return false;
  t.lookahead = Lookahead{jcc.address, *jcc.target, taken_end, jcc.next_address(), fall_end};
  return true;
}

void SoftwareTracer::settle_lookahead(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc) {
  if (!t.lookahead) return;
  const Lookahead plan = *t.lookahead;
  t.lookahead.reset();
  const bool taken = pc >= plan.taken_to && pc <= plan.taken_end;
  if (taken || (pc >= plan.fall_to && pc <= plan.fall_end)) ++stats_.looked_past;
  if (!taken) return;  // not taken, or not run yet (the thread is still before it)
  auto regs = control.read_general_registers(tid);
  if (!regs) return;  // the thread is gone with its registers
  ControlMemory code(control);
  int64_t delta = 0;
  if (pc == plan.taken_end) {
    delta = blocks_.block_end(plan.taken_to, code).rsp_delta.value_or(0);
  } else {
    // Stopped inside the block (a user breakpoint, a signal): only the
    // instructions before the pc have run.
    for (uint64_t addr = plan.taken_to; addr < pc;) {
      auto insn = blocks_.instruction_at(addr, code);
      if (!insn) break;
      delta += plain_rsp_delta(*insn).value_or(0);
      addr = insn->next_address();
    }
  }
  const decoder::StackSnapshot now = stack_of(*regs);
  store(t, plan.jcc, plan.taken_to, decoder::StackSnapshot{now.rsp - static_cast<uint64_t>(delta), now.rbp});
}

void SoftwareTracer::on_held(TracedThreadControl& control, pid_t tid) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->lookahead) return;
  auto regs = control.read_general_registers(tid);
  if (regs) settle_lookahead(control, *t, tid, pc_of(*regs));
}

}  // namespace stub
