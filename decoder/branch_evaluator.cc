#include "decoder/branch_evaluator.h"
#include "protocol/hex_text.h"

#include <array>
#include <string>

namespace decoder {
namespace {

using btstub::ErrorCode;
using btstub::Expected;
using btstub::make_error;

uint64_t read_ref(const RegisterRef& ref, const RegisterSource& regs) {
  return mask_to(regs.get(ref.reg), ref.width);
}

using protocol::hex;

btstub::Error unsupported(const Instruction& insn, const char* why) {
  return make_error(ErrorCode::NotSupported,
                    "cannot predict '" + insn.text + "' at " +
                        hex(insn.address) + ": " + why);
}

Expected<uint64_t> read_pointer(uint64_t addr, uint8_t size, MemoryReader& mem) {
  if (size == 0 || size > 8) {
    return make_error(ErrorCode::NotSupported,
                      "unsupported pointer size " + std::to_string(size));
  }
  std::array<uint8_t, 8> bytes{};
  if (mem.read(addr, bytes.data(), size) != size) {
    return make_error(ErrorCode::MemoryFault,
                      "cannot read branch target at " + hex(addr));
  }
  uint64_t value = 0;
  for (uint8_t i = size; i-- > 0;) value = (value << 8) | bytes[i];
  return value;
}

Expected<uint64_t> indirect_target(const Instruction& insn,
                                   const RegisterSource& regs, MemoryReader& mem) {
  if (const auto* reg = std::get_if<RegisterRef>(&insn.indirect)) {
    return read_ref(*reg, regs);
  }
  if (const auto* operand = std::get_if<MemoryOperand>(&insn.indirect)) {
    return read_pointer(effective_address(*operand, regs), operand->access_size,
                        mem);
  }
  return unsupported(insn, "operand not understood");
}

NextPc branch_if(bool taken, const Instruction& insn) {
  if (taken) return NextPc{NextKind::Branch, insn.target.value_or(0)};
  return NextPc{NextKind::FallThrough, insn.next_address()};
}

bool loop_taken(const Instruction& insn, const RegisterSource& regs) {
  const uint64_t counter = mask_to(regs.get(Register::Rcx), insn.counter_width);
  // Evaluated before execution: loop* decrement first, then test.
  const bool nonzero_after = mask_to(counter - 1, insn.counter_width) != 0;
  const bool zf = (regs.get(Register::Rflags) & kFlagZero) != 0;
  switch (insn.loop_op) {
    case LoopOp::Loop: return nonzero_after;
    case LoopOp::LoopE: return nonzero_after && zf;
    case LoopOp::LoopNE: return nonzero_after && !zf;
    case LoopOp::JumpIfZero: return counter == 0;
    case LoopOp::None: break;
  }
  return false;
}

Expected<NextPc> near_transfer(const Instruction& insn,
                               const RegisterSource& regs, MemoryReader& mem) {
  if (insn.operand_size_override) {
    return unsupported(insn, "0x66-prefixed near branch is CPU-vendor dependent");
  }
  switch (insn.kind) {
    case ControlKind::ConditionalJump:
      if (!insn.target) return unsupported(insn, "no target");
      return branch_if(condition_holds(insn.condition, regs.get(Register::Rflags)),
                       insn);
    case ControlKind::Loop:
      if (!insn.target) return unsupported(insn, "no target");
      return branch_if(loop_taken(insn, regs), insn);
    case ControlKind::Jump:
    case ControlKind::Call:
      if (!insn.target) return unsupported(insn, "no target");
      return NextPc{NextKind::Branch, *insn.target};
    case ControlKind::Return: {
      auto target = read_pointer(regs.get(Register::Rsp), 8, mem);
      if (!target) return target.error();
      return NextPc{NextKind::Branch, *target};
    }
    default: {  // IndirectJump, IndirectCall
      auto target = indirect_target(insn, regs, mem);
      if (!target) return target.error();
      return NextPc{NextKind::Branch, *target};
    }
  }
}

}  // namespace

bool condition_holds(Condition cond, uint64_t rflags) {
  const bool cf = rflags & kFlagCarry;
  const bool pf = rflags & kFlagParity;
  const bool zf = rflags & kFlagZero;
  const bool sf = rflags & kFlagSign;
  const bool of = rflags & kFlagOverflow;
  switch (cond) {
    case Condition::O: return of;
    case Condition::NO: return !of;
    case Condition::B: return cf;
    case Condition::AE: return !cf;
    case Condition::E: return zf;
    case Condition::NE: return !zf;
    case Condition::BE: return cf || zf;
    case Condition::A: return !cf && !zf;
    case Condition::S: return sf;
    case Condition::NS: return !sf;
    case Condition::P: return pf;
    case Condition::NP: return !pf;
    case Condition::L: return sf != of;
    case Condition::GE: return sf == of;
    case Condition::LE: return zf || sf != of;
    case Condition::G: return !zf && sf == of;
    case Condition::None: break;
  }
  return false;
}

uint64_t effective_address(const MemoryOperand& operand,
                           const RegisterSource& regs) {
  uint64_t address = static_cast<uint64_t>(operand.disp);
  if (operand.base) address += read_ref(*operand.base, regs);
  if (operand.index) address += read_ref(*operand.index, regs) * operand.scale;
  address = mask_to(address, operand.address_size);
  if (operand.segment == Segment::Fs) address += regs.get(Register::FsBase);
  if (operand.segment == Segment::Gs) address += regs.get(Register::GsBase);
  return address;
}

Expected<NextPc> next_pc(const Instruction& insn, const RegisterSource& regs,
                         MemoryReader& mem) {
  switch (insn.kind) {
    case ControlKind::None:
      return NextPc{NextKind::FallThrough, insn.next_address()};
    case ControlKind::ConditionalJump:
    case ControlKind::Jump:
    case ControlKind::IndirectJump:
    case ControlKind::Call:
    case ControlKind::IndirectCall:
    case ControlKind::Return:
    case ControlKind::Loop:
      return near_transfer(insn, regs, mem);
    case ControlKind::Syscall:
      if (insn.kernel_picks_return) {
        return unsupported(insn, "the kernel picks sysenter's return point");
      }
      return NextPc{NextKind::Syscall, insn.next_address()};
    case ControlKind::Interrupt:
    case ControlKind::Trap:
      return NextPc{NextKind::Stop, insn.can_fall_through() ? insn.next_address()
                                                            : insn.address};
    case ControlKind::FarTransfer:
      return unsupported(insn, "far transfer (segment change)");
    case ControlKind::Other:
      break;
  }
  return unsupported(insn, "unclassified control transfer");
}

}  // namespace decoder
