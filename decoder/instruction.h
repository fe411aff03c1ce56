#pragma once
// One decoded x86-64 instruction, reduced to what a branch tracer needs:
// is it a control transfer, of which kind, and how to compute its target.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "decoder/registers.h"

namespace decoder {

// The low `bytes` bytes of `value`: an operand, register or address of that
// width (8 or more: all of it).
inline uint64_t mask_to(uint64_t value, uint8_t bytes) {
  return bytes >= 8 ? value : value & ((uint64_t{1} << (8 * bytes)) - 1);
}

enum class ControlKind {
  None,            // not a control transfer (includes endbr64, nops, rep movs)
  ConditionalJump, // jcc rel8/rel32
  Jump,            // jmp rel8/rel32
  IndirectJump,    // jmp reg / jmp mem (incl. RIP-relative, notrack, bnd)
  Call,            // call rel32
  IndirectCall,    // call reg / call mem
  Return,          // ret, ret imm16 (also bnd ret, rep ret)
  Loop,            // loop, loope, loopne, jrcxz, jecxz
  Syscall,         // syscall, sysenter, int 0x80
  Interrupt,       // int n (n != 0x80), int3, int1
  Trap,            // ud0/ud1/ud2, hlt, sysret/sysexit, vmcall...: always faults
  FarTransfer,     // ljmp, lcall, lret, iret/iretd/iretq
  Other,           // xbegin/xabort/xend, or anything Capstone groups as a
                   // transfer that the classifier does not know
};

std::string_view to_string(ControlKind kind);

// jcc, jmp, call, ret and loop in their near forms: they change rip (call
// and ret also rsp and one stack slot, loop rcx) and never enter the kernel.
bool is_near_transfer(ControlKind kind);

// jcc condition codes, by the name of their "taken" sense.
enum class Condition {
  None, O, NO, B, AE, E, NE, BE, A, S, NS, P, NP, L, GE, LE, G,
};

enum class LoopOp {
  None,
  Loop,          // dec counter; taken if counter != 0
  LoopE,         // dec counter; taken if counter != 0 && ZF
  LoopNE,        // dec counter; taken if counter != 0 && !ZF
  JumpIfZero,    // jrcxz/jecxz: taken if counter == 0 (no decrement)
};

// A general-purpose register as used by an operand: `width` is 8 for rax..r15
// and 4 for eax..r15d (address-size-prefixed addressing).
struct RegisterRef {
  Register reg = Register::Rax;
  uint8_t width = 8;
  bool operator==(const RegisterRef&) const = default;
};

enum class Segment { None, Fs, Gs };  // cs/ds/es/ss have base 0 in 64-bit mode

// Effective address = segment_base + ((base + index*scale + disp) mod 2^(8*address_size)).
// RIP-relative operands are already resolved: base is empty, rip_relative is
// set and disp holds next_address + displacement.
struct MemoryOperand {
  std::optional<RegisterRef> base;
  std::optional<RegisterRef> index;
  uint8_t scale = 1;
  int64_t disp = 0;
  Segment segment = Segment::None;
  uint8_t address_size = 8;
  uint8_t access_size = 8;  // bytes read for the target pointer
  bool rip_relative = false;
  bool operator==(const MemoryOperand&) const = default;
};

// Where an indirect transfer takes its target from.
using IndirectOperand = std::variant<std::monostate, RegisterRef, MemoryOperand>;

// How an instruction changes rsp and rbp, for rebuilding them at every
// position of a recorded history (decoder/stack_tracking.h). Only the exact,
// register-independent forms get an op; any other write to rsp or rbp sets
// a clobber flag, so that replay reports the register as unknown rather than
// guessing.
enum class StackOp {
  None,
  Push,        // rsp -= value (8, or 2 with a 0x66 prefix); writes [rsp, rsp+value)
  Pop,         // rsp += value
  AdjustRsp,   // rsp += value (add/sub rsp, imm; lea rsp, [rsp + d])
  AndRsp,      // rsp &= value
  RbpFromRsp,  // rbp = rsp + value (mov rbp, rsp; lea rbp, [rsp + d])
  RspFromRbp,  // rsp = rbp + value (mov rsp, rbp; lea rsp, [rbp + d])
  Leave,       // rsp = rbp + 8; rbp = loaded from the stack
  Call,        // rsp -= 8; writes the return address (next_address())
  Return,      // rsp += 8 + value (ret imm16)
};

struct StackEffect {
  StackOp op = StackOp::None;
  int64_t value = 0;
  bool pushes_rbp = false;                // Push of rbp: the slot gets rbp's value
  std::optional<uint64_t> pushed_value;   // Push of an immediate
  bool clobbers_rsp = false;  // rsp after it is unrelated to rsp/rbp before
  bool clobbers_rbp = false;  // rbp after it is unrelated (pop rbp, mov rbp, rax...)
  bool operator==(const StackEffect&) const = default;
};

struct Instruction {
  uint64_t address = 0;
  uint8_t size = 0;
  std::string text;  // "jmp qword ptr [rip + 0x2fe2]", for tests and logs

  ControlKind kind = ControlKind::None;
  std::optional<uint64_t> target;  // direct forms (jcc, jmp, call, loop, xbegin)
  IndirectOperand indirect;        // IndirectJump / IndirectCall
  Condition condition = Condition::None;  // ConditionalJump
  LoopOp loop_op = LoopOp::None;          // Loop
  uint8_t counter_width = 8;              // Loop: 8 = rcx, 4 = ecx (0x67 prefix)
  uint16_t stack_adjust = 0;              // ret imm16 / lret imm16
  uint8_t interrupt_vector = 0;           // Interrupt/Syscall via int n
  // A 0x66 prefix on a near branch: Intel ignores it, AMD truncates the
  // target to 16 bits (and Capstone decodes the AMD length), so the outcome
  // depends on the CPU vendor and the evaluator refuses it.
  bool operand_size_override = false;
  // sysenter: Linux returns through the vDSO, not to next_address().
  bool kernel_picks_return = false;
  // Effect on rsp/rbp (replay's stack tracking).
  StackEffect stack;

  uint64_t next_address() const { return address + size; }
  // True when execution can continue at next_address() right after this
  // instruction (not-taken branches, syscalls, trap-style interrupts).
  bool can_fall_through() const;
  bool is_control_transfer() const { return kind != ControlKind::None; }
};

}  // namespace decoder
