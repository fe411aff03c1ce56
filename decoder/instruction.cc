#include "decoder/instruction.h"

namespace decoder {

std::string_view to_string(ControlKind kind) {
  switch (kind) {
    case ControlKind::None: return "none";
    case ControlKind::ConditionalJump: return "conditional-jump";
    case ControlKind::Jump: return "jump";
    case ControlKind::IndirectJump: return "indirect-jump";
    case ControlKind::Call: return "call";
    case ControlKind::IndirectCall: return "indirect-call";
    case ControlKind::Return: return "return";
    case ControlKind::Loop: return "loop";
    case ControlKind::Syscall: return "syscall";
    case ControlKind::Interrupt: return "interrupt";
    case ControlKind::Trap: return "trap";
    case ControlKind::FarTransfer: return "far-transfer";
    case ControlKind::Other: return "other";
  }
  return "?";
}

bool is_near_transfer(ControlKind kind) {
  switch (kind) {
    case ControlKind::ConditionalJump:
    case ControlKind::Jump:
    case ControlKind::IndirectJump:
    case ControlKind::Call:
    case ControlKind::IndirectCall:
    case ControlKind::Return:
    case ControlKind::Loop:
      return true;
    default:
      return false;
  }
}

bool Instruction::can_fall_through() const {
  switch (kind) {
    case ControlKind::None:
    case ControlKind::ConditionalJump:
    case ControlKind::Loop:
    case ControlKind::Syscall:
      return true;
    case ControlKind::Interrupt:
      // int3/int1/int 3/int 4 are traps: the kernel reports them with rip
      // after the instruction, and execution may resume there. Other vectors
      // have kernel-only gates and fault with rip on the instruction.
      return interrupt_vector == 1 || interrupt_vector == 3 ||
             interrupt_vector == 4;
    case ControlKind::Other:
      return true;  // xbegin/xend continue in line when no abort happens
    default:
      return false;
  }
}

}  // namespace decoder
