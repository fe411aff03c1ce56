#include "decoder/instruction_footprint.h"

#include <capstone/capstone.h>

#include <variant>

#include "decoder/branch_evaluator.h"
#include "decoder/capstone_classify.h"

namespace decoder {
namespace {

constexpr uint64_t kFlagAlignmentCheck = uint64_t{1} << 18;

// Interrupts, privileged instructions (they fault in ring 3), and every
// extension with state beyond xmm0-15/mxcsr (x87, MMX, ymm/zmm and mask
// registers), transactional state, or a base register write the kernel
// may not keep.
constexpr uint8_t kRefusedGroups[] = {
    X86_GRP_INT,  X86_GRP_IRET, X86_GRP_PRIVILEGE, X86_GRP_FPU,      X86_GRP_MMX,
    X86_GRP_3DNOW, X86_GRP_AVX, X86_GRP_AVX2,      X86_GRP_AVX512,   X86_GRP_CDI,
    X86_GRP_ERI,  X86_GRP_PFI,  X86_GRP_DQI,       X86_GRP_BWI,      X86_GRP_VLX,
    X86_GRP_FMA,  X86_GRP_FMA4, X86_GRP_F16C,      X86_GRP_XOP,      X86_GRP_TBM,
    X86_GRP_RTM,  X86_GRP_HLE,  X86_GRP_FSGSBASE,  X86_GRP_SGX,      X86_GRP_VM,
    X86_GRP_NOT64BITMODE,
};

bool in_refused_group(const cs_detail& detail) {
  for (uint8_t i = 0; i < detail.groups_count; ++i) {
    for (uint8_t group : kRefusedGroups) {
      if (detail.groups[i] == group) return true;
    }
  }
  return false;
}

// Instructions Capstone groups with harmless ones but that touch memory
// through implicit or rcx-sized ranges (string ops, xlat, xsave...), read
// state that changes between now and the client's step (rdtsc, cpuid),
// may fault whatever memory is readable (div, ldmxcsr, sgdt under UMIP,
// popf setting TF, monitor), or are privileged without Capstone saying so.
bool refused_id(unsigned id, const cs_x86& x86) {
  switch (id) {
    case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSQ:
    case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD: case X86_INS_STOSQ:
    case X86_INS_LODSB: case X86_INS_LODSW: case X86_INS_LODSD: case X86_INS_LODSQ:
    case X86_INS_SCASB: case X86_INS_SCASW: case X86_INS_SCASD: case X86_INS_SCASQ:
    case X86_INS_CMPSB: case X86_INS_CMPSW: case X86_INS_CMPSQ:
    case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
    case X86_INS_OUTSB: case X86_INS_OUTSW: case X86_INS_OUTSD:
    case X86_INS_IN: case X86_INS_OUT: case X86_INS_XLATB:
    case X86_INS_CPUID: case X86_INS_RDTSC: case X86_INS_RDTSCP: case X86_INS_RDPMC:
    case X86_INS_RDMSR: case X86_INS_CLTS: case X86_INS_INVPCID:
    case X86_INS_XGETBV: case X86_INS_XSETBV:
    case X86_INS_XSAVE: case X86_INS_XSAVE64: case X86_INS_XSAVEC: case X86_INS_XSAVEC64:
    case X86_INS_XSAVEOPT: case X86_INS_XSAVEOPT64: case X86_INS_XSAVES: case X86_INS_XSAVES64:
    case X86_INS_XRSTOR: case X86_INS_XRSTOR64: case X86_INS_XRSTORS: case X86_INS_XRSTORS64:
    case X86_INS_FXSAVE: case X86_INS_FXSAVE64: case X86_INS_FXRSTOR: case X86_INS_FXRSTOR64:
    case X86_INS_ENTER: case X86_INS_POPF: case X86_INS_POPFD: case X86_INS_POPFQ:
    case X86_INS_DIV: case X86_INS_IDIV: case X86_INS_BOUND:
    case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
    case X86_INS_CLFLUSH: case X86_INS_CLFLUSHOPT: case X86_INS_CLWB:
    case X86_INS_MASKMOVQ: case X86_INS_MASKMOVDQU:
    case X86_INS_LDMXCSR: case X86_INS_VLDMXCSR:
    case X86_INS_SGDT: case X86_INS_SIDT: case X86_INS_SLDT: case X86_INS_STR:
    case X86_INS_SMSW: case X86_INS_LAR: case X86_INS_LSL: case X86_INS_VERR: case X86_INS_VERW:
    case X86_INS_LDS: case X86_INS_LES: case X86_INS_LFS: case X86_INS_LGS: case X86_INS_LSS:
    case X86_INS_MONITOR: case X86_INS_MWAIT: case X86_INS_XTEST:
    case X86_INS_ENCLS: case X86_INS_ENCLU: case X86_INS_GETSEC:
      return true;
    // Same ids as SSE2's movsd/cmpsd; the string forms are the one-byte opcodes.
    case X86_INS_MOVSD:
    case X86_INS_CMPSD: return x86.opcode[0] != 0x0F;
    default: return false;
  }
}

bool has_memory_operand(const cs_x86& x86) {
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    if (x86.operands[i].type == X86_OP_MEM) return true;
  }
  return false;
}

bool has_register_operand(const cs_x86& x86) {
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    if (x86.operands[i].type == X86_OP_REG) return true;
  }
  return false;
}

// Forms whose real effect is not the memory operand Capstone reports:
// xchg with memory is implicitly locked (see refused_encoding), and bt*
// with a register bit offset address up to 2^60 bytes away.
bool refused_operands(unsigned id, const cs_x86& x86) {
  if (!has_memory_operand(x86)) return false;
  switch (id) {
    case X86_INS_XCHG: return true;
    case X86_INS_BT: case X86_INS_BTS: case X86_INS_BTR: case X86_INS_BTC:
      return has_register_operand(x86);
    default: return false;
  }
}

// Read from the raw bytes: Capstone 4 drops some prefixes from cs_x86
// and has no field that says VEX/EVEX/XOP.
bool refused_encoding(const cs_insn& insn) {
  std::size_t i = 0;
  bool lock = false, mandatory = false;
  for (; i < insn.size; ++i) {
    const uint8_t b = insn.bytes[i];
    if (b == 0xF0) {
      lock = true;
    } else if (b == 0x66 || b == 0xF2 || b == 0xF3) {
      mandatory = true;
    } else if (!(b == 0x67 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26 || b == 0x64 ||
                 b == 0x65 || (b & 0xF0) == 0x40)) {
      break;
    }
  }
  // Locked accesses are the ones other processes sharing the memory
  // synchronise on, and split-lock detection may trap one across a line.
  if (lock || i >= insn.size) return true;
  const uint8_t op = insn.bytes[i];
  const uint8_t next = i + 1 < insn.size ? insn.bytes[i + 1] : 0;
  // VEX and EVEX leave ymm/zmm upper halves and mask registers changed even
  // with xmm destinations; XOP is 8F with a nonzero reg field (8F /0 is pop).
  if (op == 0xC4 || op == 0xC5 || op == 0x62) return true;
  if (op == 0x8F && ((next >> 3) & 7) != 0) return true;
  // Capstone 4 decodes prefixed 0F AE (incssp, umonitor, umwait, tpause,
  // ptwrite) as fences or xsave; incssp moves the shadow stack pointer.
  return mandatory && op == 0x0F && next == 0xAE;
}

// Capstone 4 marks many stores read-only (movups, movntdq, movq/movlps,
// extractps to memory, cmpxchg), so a memory first operand counts as
// written unless the instruction is known only to read it.
bool may_write(unsigned id, const cs_x86_op& op, uint8_t index) {
  if ((op.access & CS_AC_WRITE) != 0 || op.access == 0) return true;
  if (index != 0) return false;
  switch (id) {
    case X86_INS_CMP: case X86_INS_TEST: case X86_INS_BT: case X86_INS_PUSH:
    case X86_INS_JMP: case X86_INS_CALL: case X86_INS_MUL: case X86_INS_IMUL:
      return false;
    default: return true;
  }
}

// Address-only operands: nothing is read, so nothing can fault.
bool accesses_memory(unsigned id) {
  switch (id) {
    case X86_INS_LEA: case X86_INS_NOP:
    case X86_INS_PREFETCH: case X86_INS_PREFETCHNTA: case X86_INS_PREFETCHT0:
    case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2: case X86_INS_PREFETCHW:
      return false;
    default: return true;
  }
}

// Legacy SSE faults on a misaligned 16-byte operand except in these.
bool tolerates_misalignment(unsigned id) {
  return id == X86_INS_MOVUPS || id == X86_INS_MOVUPD || id == X86_INS_MOVDQU ||
         id == X86_INS_LDDQU;
}

uint8_t stack_word(const cs_x86& x86) { return x86.prefix[2] == 0x66 ? 2 : 8; }

bool add_explicit(const cs_insn& insn, const RegisterSource& regs,
                  std::vector<MemoryTouch>& out) {
  const cs_x86& x86 = insn.detail->x86;
  if (!accesses_memory(insn.id)) return true;
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type != X86_OP_MEM) continue;
    if (op.size == 0 || op.size > 64) return false;
    IndirectOperand converted = convert_memory(x86, op.mem, op.size, insn.address + insn.size);
    auto* mem = std::get_if<MemoryOperand>(&converted);
    if (mem == nullptr) return false;
    // pop computes an rsp-based destination after rsp has moved.
    if (insn.id == X86_INS_POP && mem->base && mem->base->reg == Register::Rsp) {
      mem->disp += stack_word(x86);
    }
    const uint64_t address = effective_address(*mem, regs);
    if (op.size == 16 && address % 16 != 0 && !tolerates_misalignment(insn.id)) return false;
    out.push_back(MemoryTouch{address, op.size, may_write(insn.id, op, i)});
  }
  return true;
}

// The stack slot push/call write and pop/ret/leave read; the stack is
// always addressed with 64-bit rsp/rbp, whatever the address-size prefix.
void add_stack(const cs_insn& insn, const RegisterSource& regs, std::vector<MemoryTouch>& out) {
  const uint8_t word = stack_word(insn.detail->x86);
  const uint64_t rsp = regs.get(Register::Rsp);
  switch (insn.id) {
    case X86_INS_PUSH:
    case X86_INS_PUSHF:
    case X86_INS_PUSHFQ: out.push_back(MemoryTouch{rsp - word, word, true}); break;
    case X86_INS_CALL: out.push_back(MemoryTouch{rsp - 8, 8, true}); break;
    case X86_INS_POP: out.push_back(MemoryTouch{rsp, word, false}); break;
    case X86_INS_RET: out.push_back(MemoryTouch{rsp, 8, false}); break;
    case X86_INS_LEAVE: out.push_back(MemoryTouch{regs.get(Register::Rbp), word, false}); break;
    default: break;
  }
}

}  // namespace

std::optional<std::vector<MemoryTouch>> capstone_footprint(const cs_insn& insn,
                                                           const Instruction& classified,
                                                           const RegisterSource& regs) {
  // Other transfers enter the kernel or fault on purpose.
  const bool plain = classified.kind == ControlKind::None || is_near_transfer(classified.kind);
  if (insn.detail == nullptr || !plain) return std::nullopt;
  // A 0x66 near branch pushes or pops 2 or 8 bytes depending on the vendor.
  if (classified.is_control_transfer() && classified.operand_size_override) return std::nullopt;
  const cs_x86& x86 = insn.detail->x86;
  if (refused_encoding(insn) || in_refused_group(*insn.detail) || refused_id(insn.id, x86) ||
      refused_operands(insn.id, x86)) {
    return std::nullopt;
  }
  std::vector<MemoryTouch> touches;
  if (!add_explicit(insn, regs, touches)) return std::nullopt;
  add_stack(insn, regs, touches);
  // With AC set, Linux's CR0.AM turns any misaligned access into SIGBUS.
  if (!touches.empty() && (regs.get(Register::Rflags) & kFlagAlignmentCheck) != 0) {
    return std::nullopt;
  }
  return touches;
}

}  // namespace decoder
