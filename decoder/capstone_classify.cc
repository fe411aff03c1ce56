#include "decoder/capstone_classify.h"

#include <optional>
#include <string>

namespace decoder {
namespace {

constexpr uint8_t kPrefixOpSize = 0x66;
constexpr uint8_t kPrefixAddrSize = 0x67;

std::optional<RegisterRef> map_register(x86_reg reg) {
  switch (reg) {
    case X86_REG_RAX: return RegisterRef{Register::Rax, 8};
    case X86_REG_RBX: return RegisterRef{Register::Rbx, 8};
    case X86_REG_RCX: return RegisterRef{Register::Rcx, 8};
    case X86_REG_RDX: return RegisterRef{Register::Rdx, 8};
    case X86_REG_RSI: return RegisterRef{Register::Rsi, 8};
    case X86_REG_RDI: return RegisterRef{Register::Rdi, 8};
    case X86_REG_RBP: return RegisterRef{Register::Rbp, 8};
    case X86_REG_RSP: return RegisterRef{Register::Rsp, 8};
    case X86_REG_R8: return RegisterRef{Register::R8, 8};
    case X86_REG_R9: return RegisterRef{Register::R9, 8};
    case X86_REG_R10: return RegisterRef{Register::R10, 8};
    case X86_REG_R11: return RegisterRef{Register::R11, 8};
    case X86_REG_R12: return RegisterRef{Register::R12, 8};
    case X86_REG_R13: return RegisterRef{Register::R13, 8};
    case X86_REG_R14: return RegisterRef{Register::R14, 8};
    case X86_REG_R15: return RegisterRef{Register::R15, 8};
    case X86_REG_EAX: return RegisterRef{Register::Rax, 4};
    case X86_REG_EBX: return RegisterRef{Register::Rbx, 4};
    case X86_REG_ECX: return RegisterRef{Register::Rcx, 4};
    case X86_REG_EDX: return RegisterRef{Register::Rdx, 4};
    case X86_REG_ESI: return RegisterRef{Register::Rsi, 4};
    case X86_REG_EDI: return RegisterRef{Register::Rdi, 4};
    case X86_REG_EBP: return RegisterRef{Register::Rbp, 4};
    case X86_REG_ESP: return RegisterRef{Register::Rsp, 4};
    case X86_REG_R8D: return RegisterRef{Register::R8, 4};
    case X86_REG_R9D: return RegisterRef{Register::R9, 4};
    case X86_REG_R10D: return RegisterRef{Register::R10, 4};
    case X86_REG_R11D: return RegisterRef{Register::R11, 4};
    case X86_REG_R12D: return RegisterRef{Register::R12, 4};
    case X86_REG_R13D: return RegisterRef{Register::R13, 4};
    case X86_REG_R14D: return RegisterRef{Register::R14, 4};
    case X86_REG_R15D: return RegisterRef{Register::R15, 4};
    default: return std::nullopt;
  }
}

std::optional<Condition> jcc_condition(unsigned id) {
  switch (id) {
    case X86_INS_JO: return Condition::O;
    case X86_INS_JNO: return Condition::NO;
    case X86_INS_JB: return Condition::B;
    case X86_INS_JAE: return Condition::AE;
    case X86_INS_JE: return Condition::E;
    case X86_INS_JNE: return Condition::NE;
    case X86_INS_JBE: return Condition::BE;
    case X86_INS_JA: return Condition::A;
    case X86_INS_JS: return Condition::S;
    case X86_INS_JNS: return Condition::NS;
    case X86_INS_JP: return Condition::P;
    case X86_INS_JNP: return Condition::NP;
    case X86_INS_JL: return Condition::L;
    case X86_INS_JGE: return Condition::GE;
    case X86_INS_JLE: return Condition::LE;
    case X86_INS_JG: return Condition::G;
    default: return std::nullopt;
  }
}

std::optional<LoopOp> loop_op(unsigned id) {
  switch (id) {
    case X86_INS_LOOP: return LoopOp::Loop;
    case X86_INS_LOOPE: return LoopOp::LoopE;
    case X86_INS_LOOPNE: return LoopOp::LoopNE;
    case X86_INS_JRCXZ:
    case X86_INS_JECXZ: return LoopOp::JumpIfZero;
    default: return std::nullopt;
  }
}

// Kinds decided by the opcode alone (no operand inspection).
std::optional<ControlKind> fixed_kind(unsigned id) {
  switch (id) {
    case X86_INS_SYSCALL:
    case X86_INS_SYSENTER: return ControlKind::Syscall;
    case X86_INS_INT1:
    case X86_INS_INT3:
    case X86_INS_INTO: return ControlKind::Interrupt;
    case X86_INS_UD0:
    case X86_INS_UD2:
    case X86_INS_UD2B:  // Capstone 4's name for ud1
    case X86_INS_HLT:
    case X86_INS_SYSRET:
    case X86_INS_SYSEXIT:
    case X86_INS_RSM:
    case X86_INS_VMCALL:
    case X86_INS_VMMCALL: return ControlKind::Trap;
    case X86_INS_LJMP:
    case X86_INS_LCALL:
    case X86_INS_RETF:
    case X86_INS_RETFQ:
    case X86_INS_IRET:
    case X86_INS_IRETD:
    case X86_INS_IRETQ: return ControlKind::FarTransfer;
    case X86_INS_XBEGIN:
    case X86_INS_XABORT:
    case X86_INS_XEND: return ControlKind::Other;
    default: return std::nullopt;
  }
}

}  // namespace

IndirectOperand convert_memory(const cs_x86& x86, const x86_op_mem& mem,
                               uint8_t access_size, uint64_t next_address) {
  MemoryOperand out;
  out.address_size = x86.prefix[3] == kPrefixAddrSize ? 4 : 8;
  out.access_size = access_size;
  out.scale = static_cast<uint8_t>(mem.scale);
  out.disp = mem.disp;
  if (mem.segment == X86_REG_FS) out.segment = Segment::Fs;
  if (mem.segment == X86_REG_GS) out.segment = Segment::Gs;
  if (mem.base == X86_REG_RIP || mem.base == X86_REG_EIP) {
    out.rip_relative = true;
    out.disp = static_cast<int64_t>(
        mask_to(next_address + static_cast<uint64_t>(mem.disp), out.address_size));
  } else if (mem.base != X86_REG_INVALID) {
    out.base = map_register(mem.base);
    if (!out.base) return std::monostate{};
  }
  if (mem.index != X86_REG_INVALID) {
    out.index = map_register(mem.index);
    if (!out.index) return std::monostate{};
  }
  return out;
}

namespace {

// Fills target / indirect from the single branch operand; true if direct.
bool read_branch_operand(const cs_x86& x86, Instruction& out) {
  if (x86.op_count < 1) return false;
  const cs_x86_op& op = x86.operands[0];
  if (op.type == X86_OP_IMM) {
    out.target = static_cast<uint64_t>(op.imm);
    return true;
  }
  if (op.type == X86_OP_REG) {
    if (auto reg = map_register(op.reg)) out.indirect = *reg;
  } else if (op.type == X86_OP_MEM) {
    out.indirect = convert_memory(x86, op.mem, op.size, out.next_address());
  }
  return false;
}

int64_t first_immediate(const cs_x86& x86) {
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    if (x86.operands[i].type == X86_OP_IMM) return x86.operands[i].imm;
  }
  return 0;
}

bool in_any_transfer_group(csh handle, const cs_insn& insn) {
  for (int group : {CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT,
                    CS_GRP_IRET, CS_GRP_BRANCH_RELATIVE}) {
    if (cs_insn_group(handle, &insn, group)) return true;
  }
  return false;
}

void classify_near(const cs_insn& insn, const cs_x86& x86, Instruction& out) {
  if (auto cond = jcc_condition(insn.id)) {
    out.kind = ControlKind::ConditionalJump;
    out.condition = *cond;
    read_branch_operand(x86, out);
  } else if (auto op = loop_op(insn.id)) {
    out.kind = ControlKind::Loop;
    out.loop_op = *op;
    const bool ecx = insn.id == X86_INS_JECXZ ||
                     (insn.id != X86_INS_JRCXZ && x86.prefix[3] == kPrefixAddrSize);
    out.counter_width = ecx ? 4 : 8;
    read_branch_operand(x86, out);
  } else if (insn.id == X86_INS_JMP || insn.id == X86_INS_CALL) {
    const bool direct = read_branch_operand(x86, out);
    const bool jump = insn.id == X86_INS_JMP;
    out.kind = direct ? (jump ? ControlKind::Jump : ControlKind::Call)
                      : (jump ? ControlKind::IndirectJump : ControlKind::IndirectCall);
  } else {  // X86_INS_RET
    out.kind = ControlKind::Return;
    out.stack_adjust = static_cast<uint16_t>(first_immediate(x86));
  }
  out.operand_size_override = x86.prefix[2] == kPrefixOpSize;
}


StackEffect effect(StackOp op, int64_t value) {
  StackEffect e;
  e.op = op;
  e.value = value;
  return e;
}

bool is_reg(const cs_x86_op& op, x86_reg reg) {
  return op.type == X86_OP_REG && op.reg == reg;
}

bool names_rsp(uint16_t reg) {
  return reg == X86_REG_RSP || reg == X86_REG_ESP || reg == X86_REG_SP || reg == X86_REG_SPL;
}
bool names_rbp(uint16_t reg) {
  return reg == X86_REG_RBP || reg == X86_REG_EBP || reg == X86_REG_BP || reg == X86_REG_BPL;
}

// [base + disp] with nothing else, in 64-bit addressing.
std::optional<int64_t> plain_offset(const cs_x86& x86, const cs_x86_op& op, x86_reg base) {
  if (op.type != X86_OP_MEM || op.mem.base != base || op.mem.index != X86_REG_INVALID ||
      op.mem.segment != X86_REG_INVALID || x86.prefix[3] == kPrefixAddrSize) {
    return std::nullopt;
  }
  return op.mem.disp;
}

// The exact forms of StackOp for mov/lea/add/sub/and; nullopt otherwise.
std::optional<StackEffect> register_form(unsigned id, const cs_x86& x86) {
  if (x86.op_count != 2) return std::nullopt;
  const cs_x86_op& dst = x86.operands[0];
  const cs_x86_op& src = x86.operands[1];
  const bool imm = src.type == X86_OP_IMM;
  StackEffect e;
  if ((id == X86_INS_ADD || id == X86_INS_SUB) && is_reg(dst, X86_REG_RSP) && imm) {
    e.op = StackOp::AdjustRsp;
    e.value = id == X86_INS_ADD ? src.imm : -src.imm;
  } else if (id == X86_INS_AND && is_reg(dst, X86_REG_RSP) && imm) {
    e.op = StackOp::AndRsp;
    e.value = src.imm;
  } else if (id == X86_INS_MOV && is_reg(dst, X86_REG_RBP) && is_reg(src, X86_REG_RSP)) {
    e.op = StackOp::RbpFromRsp;
  } else if (id == X86_INS_MOV && is_reg(dst, X86_REG_RSP) && is_reg(src, X86_REG_RBP)) {
    e.op = StackOp::RspFromRbp;
  } else if (id == X86_INS_LEA && is_reg(dst, X86_REG_RSP)) {
    if (auto d = plain_offset(x86, src, X86_REG_RSP)) {
      e = effect(StackOp::AdjustRsp, *d);
    } else if (auto d2 = plain_offset(x86, src, X86_REG_RBP)) {
      e = effect(StackOp::RspFromRbp, *d2);
    } else {
      return std::nullopt;
    }
  } else if (id == X86_INS_LEA && is_reg(dst, X86_REG_RBP)) {
    auto d = plain_offset(x86, src, X86_REG_RSP);
    if (!d) return std::nullopt;
    e = effect(StackOp::RbpFromRsp, *d);
  } else {
    return std::nullopt;
  }
  return e;
}

// Any write to rsp/rbp Capstone knows of (explicit or implicit).
void mark_clobbers(csh handle, const cs_insn& insn, StackEffect& e) {
  cs_regs read{}, written{};
  uint8_t read_count = 0, write_count = 0;
  if (cs_regs_access(handle, &insn, read, &read_count, written, &write_count) != CS_ERR_OK) {
    e.clobbers_rsp = e.clobbers_rbp = true;  // cannot tell: never guess
    return;
  }
  for (uint8_t i = 0; i < write_count; ++i) {
    if (names_rsp(written[i])) e.clobbers_rsp = true;
    if (names_rbp(written[i])) e.clobbers_rbp = true;
  }
}

StackEffect classify_stack(csh handle, const cs_insn& insn) {
  const cs_x86& x86 = insn.detail->x86;
  const int64_t word = x86.prefix[2] == kPrefixOpSize ? 2 : 8;
  const bool has_op = x86.op_count >= 1;
  StackEffect e;
  switch (insn.id) {
    case X86_INS_PUSH:
      e.op = StackOp::Push;
      e.value = word;
      e.pushes_rbp = has_op && word == 8 && is_reg(x86.operands[0], X86_REG_RBP);
      if (has_op && word == 8 && x86.operands[0].type == X86_OP_IMM) {
        e.pushed_value = static_cast<uint64_t>(x86.operands[0].imm);
      }
      return e;
    case X86_INS_PUSHF:
    case X86_INS_PUSHFQ: return effect(StackOp::Push, word);
    case X86_INS_POPF:
    case X86_INS_POPFQ: return effect(StackOp::Pop, word);
    case X86_INS_POP:
      if (has_op && is_reg(x86.operands[0], X86_REG_RSP)) break;  // pop rsp: a clobber
      e.op = StackOp::Pop;
      e.value = word;
      // pop into rbp (any width) or a memory operand based on rsp: rbp only
      // changes in the first case.
      e.clobbers_rbp = has_op && x86.operands[0].type == X86_OP_REG && names_rbp(x86.operands[0].reg);
      return e;
    case X86_INS_CALL: return effect(StackOp::Call, 0);
    case X86_INS_RET: return effect(StackOp::Return, first_immediate(x86));
    case X86_INS_LEAVE:
      if (word != 8) break;
      return effect(StackOp::Leave, 0);
    case X86_INS_ENTER:  // Capstone 4 lists no register writes for it
      e.clobbers_rsp = e.clobbers_rbp = true;
      return e;
    default:
      if (auto form = register_form(insn.id, x86)) return *form;
      break;
  }
  mark_clobbers(handle, insn, e);
  return e;
}
}  // namespace

Instruction classify_capstone(csh handle, const cs_insn& insn) {
  Instruction out;
  out.address = insn.address;
  out.size = static_cast<uint8_t>(insn.size);
  out.text = insn.mnemonic;
  if (insn.op_str[0] != '\0') out.text += std::string(" ") + insn.op_str;
  if (insn.detail == nullptr) {
    out.kind = ControlKind::Other;  // cannot happen with detail on; be safe
    return out;
  }
  const cs_x86& x86 = insn.detail->x86;
  const unsigned id = insn.id;
  out.stack = classify_stack(handle, insn);
  if (jcc_condition(id) || loop_op(id) || id == X86_INS_JMP ||
      id == X86_INS_CALL || id == X86_INS_RET) {
    classify_near(insn, x86, out);
  } else if (id == X86_INS_INT) {
    out.interrupt_vector = static_cast<uint8_t>(first_immediate(x86));
    out.kind = out.interrupt_vector == 0x80 ? ControlKind::Syscall
                                            : ControlKind::Interrupt;
  } else if (auto kind = fixed_kind(id)) {
    out.kind = *kind;
    out.kernel_picks_return = id == X86_INS_SYSENTER;
    if (id == X86_INS_INT1) out.interrupt_vector = 1;
    if (id == X86_INS_INT3) out.interrupt_vector = 3;
    if (id == X86_INS_INTO) out.interrupt_vector = 4;
    if (id == X86_INS_RETF || id == X86_INS_RETFQ) {
      out.stack_adjust = static_cast<uint16_t>(first_immediate(x86));
    }
    if (id == X86_INS_XBEGIN || id == X86_INS_LJMP || id == X86_INS_LCALL) {
      read_branch_operand(x86, out);
    }
  } else if (in_any_transfer_group(handle, insn)) {
    out.kind = ControlKind::Other;
  }
  return out;
}

}  // namespace decoder
