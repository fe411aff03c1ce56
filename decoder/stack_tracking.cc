#include "decoder/stack_tracking.h"

namespace decoder {
namespace {

using Reg = std::optional<uint64_t>;

Reg plus(const Reg& reg, int64_t delta) {
  if (!reg) return std::nullopt;
  return *reg + static_cast<uint64_t>(delta);
}

}  // namespace

StackState step_forward(const StackEffect& e, const StackState& before) {
  StackState after = before;
  switch (e.op) {
    case StackOp::None: break;
    case StackOp::Push: after.rsp = plus(before.rsp, -e.value); break;
    case StackOp::Pop:
    case StackOp::AdjustRsp: after.rsp = plus(before.rsp, e.value); break;
    case StackOp::AndRsp:
      if (before.rsp) after.rsp = *before.rsp & static_cast<uint64_t>(e.value);
      break;
    case StackOp::RbpFromRsp: after.rbp = plus(before.rsp, e.value); break;
    case StackOp::RspFromRbp: after.rsp = plus(before.rbp, e.value); break;
    case StackOp::Leave:
      after.rsp = plus(before.rbp, 8);
      after.rbp = std::nullopt;
      break;
    case StackOp::Call: after.rsp = plus(before.rsp, -8); break;
    case StackOp::Return: after.rsp = plus(before.rsp, 8 + e.value); break;
  }
  if (e.clobbers_rsp) after.rsp = std::nullopt;
  if (e.clobbers_rbp) after.rbp = std::nullopt;
  return after;
}

StackState step_backward(const StackEffect& e, const StackState& after) {
  StackState before = after;
  switch (e.op) {
    case StackOp::None: break;
    case StackOp::Push: before.rsp = plus(after.rsp, e.value); break;
    case StackOp::Pop:
    case StackOp::AdjustRsp: before.rsp = plus(after.rsp, -e.value); break;
    case StackOp::AndRsp: before.rsp = std::nullopt; break;
    case StackOp::RbpFromRsp:
      // rsp is unchanged, and it also follows from the new rbp.
      before.rbp = std::nullopt;
      before.rsp = after.rsp ? after.rsp : plus(after.rbp, -e.value);
      break;
    case StackOp::RspFromRbp:
      before.rsp = std::nullopt;
      before.rbp = after.rbp ? after.rbp : plus(after.rsp, -e.value);
      break;
    case StackOp::Leave:
      before.rbp = plus(after.rsp, -8);
      before.rsp = std::nullopt;
      break;
    case StackOp::Call: before.rsp = plus(after.rsp, 8); break;
    case StackOp::Return: before.rsp = plus(after.rsp, -8 - e.value); break;
  }
  // A clobbered register's old value cannot be recovered from its new one.
  if (e.clobbers_rsp) before.rsp = std::nullopt;
  if (e.clobbers_rbp) before.rbp = std::nullopt;
  return before;
}

StackState merge(const StackState& a, const StackState& b) {
  return StackState{a.rsp ? a.rsp : b.rsp, a.rbp ? a.rbp : b.rbp};
}

StackState after_branch(const Instruction& from_insn, uint64_t to, const StackState& before) {
  bool reaches = false;
  switch (from_insn.kind) {
    case ControlKind::ConditionalJump:
    case ControlKind::Jump:
    case ControlKind::Call:
    case ControlKind::Loop: reaches = from_insn.target && *from_insn.target == to; break;
    case ControlKind::IndirectJump:
    case ControlKind::IndirectCall:
    case ControlKind::Return: reaches = true; break;
    default: break;
  }
  if (!reaches) return StackState{};
  return step_forward(from_insn.stack, before);
}

}  // namespace decoder
