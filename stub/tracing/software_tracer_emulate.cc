// SoftwareTracer, TraceStops::Breakpoint: the trace stop is an int3 the
// process layer keeps at the block's control transfer for as long as any
// thread needs it there. Lifting it to let the transfer run would open a
// window in which another thread runs through unseen, so the transfer is
// emulated at the stop instead; the next_pc evaluator already knows the
// target, and only rip, rsp, rcx and a pushed return address change.
//
// Exactness: int3s sit only on emulable transfers, and a thread whose trace
// stop is at the end of its block reaches no other transfer before it, so
// every int3 a traced thread meets is its own trace stop. Blocks ending in
// anything not emulable (syscall, far transfer, int n, ...) get no int3:
// the thread steps through such a block (they are short: a syscall wrapper
// is a few instructions), which needs no other thread to wait, even when the
// syscall blocks. A transfer whose emulation would fault (a push to an
// unmapped stack, an unreadable return slot or pointer) is really run as a
// step, which the process layer does with the int3 lifted and every other
// thread held, so the program gets its real signal. So is one touching
// memory a client's watchpoint covers, so the watchpoint fires.
#include <csignal>
#include <variant>

#include "stub/tracing/software_tracer.h"
#include "stub/tracing/software_tracer_internal.h"

namespace stub::tracing {

using namespace tracer_detail;

namespace {

// Whether `insn` reads or writes memory a client's watchpoint covers: the
// slot a call pushes its return address into, the one a return pops, the
// pointer an indirect transfer reads. Written or read by the tracer, the
// debug registers would never see it (a `watch -l` on a stack slot missed
// the calls that wrote it).
bool touches_watched(const TracedThreadControl& control, const decoder::Instruction& insn,
                     const protocol::RegisterFile& regs) {
  using decoder::ControlKind;
  const uint64_t rsp = regs.get_u64(Amd64Reg::rsp);
  if ((insn.kind == ControlKind::Call || insn.kind == ControlKind::IndirectCall) && control.watched(rsp - 8, rsp)) {
    return true;
  }
  if (insn.kind == ControlKind::Return && control.watched(rsp, rsp + 8)) return true;
  if (const auto* pointer = std::get_if<decoder::MemoryOperand>(&insn.indirect)) {
    const uint64_t at = decoder::effective_address(*pointer, register_view(regs));
    if (control.watched(at, at + pointer->access_size)) return true;
  }
  return false;
}

}  // namespace

// Applies `insn` to `regs` (and pushes a return address). False, with
// nothing changed, when it cannot be emulated, would fault or would touch
// watched memory.
bool SoftwareTracer::emulate(TracedThreadControl& control, pid_t /*tid*/, protocol::RegisterFile& regs,
                             const decoder::Instruction& insn, uint64_t& target, bool& taken) {
  if (!emulable(insn) || touches_watched(control, insn, regs)) return false;
  ControlMemory code(control);
  auto next = decoder::next_pc(insn, register_view(regs), code);
  if (!next || (next->kind != decoder::NextKind::Branch && next->kind != decoder::NextKind::FallThrough)) {
    return false;
  }
  const uint64_t rsp = regs.get_u64(Amd64Reg::rsp);
  using decoder::ControlKind;
  if (insn.kind == ControlKind::Call || insn.kind == ControlKind::IndirectCall) {
    const uint64_t ret = insn.next_address();
    std::vector<uint8_t> slot(8);
    for (int i = 0; i < 8; ++i) slot[i] = static_cast<uint8_t>(ret >> (8 * i));
    if (!control.write_memory(rsp - 8, slot)) return false;
    regs.set_u64(Amd64Reg::rsp, rsp - 8);
  } else if (insn.kind == ControlKind::Return) {
    regs.set_u64(Amd64Reg::rsp, rsp + 8 + insn.stack_adjust);
  } else if (insn.kind == ControlKind::Loop && insn.loop_op != decoder::LoopOp::JumpIfZero) {
    regs.set_u64(Amd64Reg::rcx, regs.get_u64(Amd64Reg::rcx) - 1);
  }
  regs.set_u64(Amd64Reg::rip, next->target);
  target = next->target;
  taken = next->taken();
  ++stats_.emulated;
  return true;
}

SoftwareTracer::Next SoftwareTracer::continue_by_emulation(TracedThreadControl& control, ThreadState& t,
                                                           pid_t tid, protocol::RegisterFile regs) {
  ControlMemory code(control);
  bool moved = false;
  auto flush = [&] { return !moved || write_transfer(control, tid, regs); };
  for (int chain = 0; chain < kMaxTakenInARow; ++chain) {
    const uint64_t pc = pc_of(regs);
    const BlockEnd end = blocks_.block_end(pc, code);
    if (end.kind != BlockEnd::Kind::Transfer || !emulable(end.insn)) {
      // Stepped to (and over) the end; step_one decides per instruction.
      if (!flush()) return Next::Report;
      return step_one(control, t, regs);
    }
    // A landing of an emulation with a hardware breakpoint: the thread must
    // run from it for the debug register to fire (where the thread stopped
    // itself, the breakpoint already fired before our int3).
    if (end.address != pc || control.has_user_breakpoint(pc) || (moved && control.hw_breakpoint_at(pc))) {
      // A user breakpoint at the transfer is the client's stop; ours waits
      // under it for the resume.
      if (!flush()) return Next::Report;
      if (end.address != pc && arm_past(control, t, tid, end.insn)) return Next::Continue;
      if (!arm(control, t, tid, end.address)) return step_one(control, t, regs);
      return Next::Continue;
    }
    const decoder::StackSnapshot stack = stack_of(regs);
    if (refuses_more(t) && predicts_branch(end.insn, regs, code)) {
      if (!flush()) return Next::Report;
      return full_stop(t);
    }
    uint64_t target = 0;
    bool taken = false;
    if (!emulate(control, tid, regs, end.insn, target, taken)) {
      // Would fault (or cannot be predicted): run the real instruction.
      if (!flush()) return Next::Report;
      return step_over(t, regs, end.insn, predicts_branch(end.insn, regs, code));
    }
    moved = true;
    if (taken && !store(t, pc, target, stack)) {
      (void)flush();
      return Next::Report;  // full: stopped_full is set
    }
  }
  if (!flush()) return Next::Report;
  // Still at a transfer: stop on it again at once.
  if (!arm(control, t, tid, pc_of(regs))) return step_one(control, t, regs);
  return Next::Continue;
}

bool SoftwareTracer::pass_trace_breakpoint(TracedThreadControl& control, pid_t tid) {
  // An untraced thread met an int3: kept ones would cost it a stop each.
  untraced_met_ = true;
  update_kept_int3s(control);
  auto regs = control.read_general_registers(tid);
  if (!regs) return false;
  ControlMemory code(control);
  auto insn = blocks_.instruction_at(pc_of(*regs), code);
  uint64_t target = 0;
  bool taken = false;
  if (!insn || !emulate(control, tid, *regs, *insn, target, taken)) return false;
  return write_transfer(control, tid, *regs);
}

}  // namespace stub::tracing
