#pragma once
// Evaluates, before an instruction executes, where execution goes next.
// Pure: registers and data memory come in through interfaces.
#include <cstdint>

#include "decoder/code_reader.h"
#include "decoder/instruction.h"
#include "decoder/registers.h"
#include "protocol/expected.h"

namespace decoder {

enum class NextKind {
  FallThrough,  // continues at next_address() (non-branch, branch not taken)
  Branch,       // transfer taken: jmp, call, ret, taken jcc/loop
  Syscall,      // enters the kernel; normally resumes at next_address(), but
                // rt_sigreturn/exit/execve etc. are the tracer's business
  Stop,         // traps or faults (int3, ud2, hlt, ...): a signal stop follows
};

struct NextPc {
  NextKind kind = NextKind::FallThrough;
  // FallThrough/Syscall: next_address(). Branch: the target. Stop: the rip
  // the kernel reports with the signal (after int3/int1, on ud2/hlt).
  uint64_t target = 0;
  bool taken() const { return kind == NextKind::Branch; }
};

// Errors: NotSupported for outcomes that cannot be predicted from user state
// (far transfers, sysenter, xbegin, vendor-dependent 0x66 branches, operands
// the decoder could not describe); MemoryFault when a target pointer cannot
// be read.
btstub::Expected<NextPc> next_pc(const Instruction& insn,
                                 const RegisterSource& regs, MemoryReader& mem);

// True when jcc `cond` is taken under `rflags`. Condition::None -> false.
bool condition_holds(Condition cond, uint64_t rflags);

// Linear address of a memory operand (segment base included).
uint64_t effective_address(const MemoryOperand& operand,
                           const RegisterSource& regs);

}  // namespace decoder
