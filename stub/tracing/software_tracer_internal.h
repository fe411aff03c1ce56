#pragma once
// Helpers shared by the software_tracer*.cc files.
#include <algorithm>
#include <cstring>
#include <variant>

#include "decoder/branch_evaluator.h"
#include "decoder/block_trace.h"
#include "protocol/amd64_registers.h"
#include "protocol/register_file.h"
#include "stub/process/register_mapping.h"
#include "stub/process/restart_codes.h"
#include "stub/process/trace_hook.h"

namespace stub::tracing::tracer_detail {

using process::TracedThreadControl;
using process::register_view;

using protocol::Amd64Reg;

// The inferior's original bytes (user breakpoints hidden) as a decoder reader.
class ControlMemory final : public decoder::MemoryReader {
 public:
  explicit ControlMemory(TracedThreadControl& control) : control_(control) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    auto bytes = control_.read_memory(addr, len);
    if (!bytes) return 0;
    const std::size_t n = std::min(len, bytes->size());
    std::memcpy(out, bytes->data(), n);
    return n;
  }

 private:
  TracedThreadControl& control_;
};

inline uint64_t pc_of(const protocol::RegisterFile& regs) { return regs.get_u64(Amd64Reg::rip); }

// Stopped in a system call the kernel makes again when the thread resumes
// without a signal: it moves the pc back onto the `syscall` then.
inline bool in_restarted_call(const protocol::RegisterFile& regs) {
  return process::in_restarted_system_call(regs.get_u64(Amd64Reg::orig_rax), regs.get_u64(Amd64Reg::rax));
}

inline decoder::StackSnapshot stack_of(const protocol::RegisterFile& regs) {
  return decoder::StackSnapshot{regs.get_u64(Amd64Reg::rsp), regs.get_u64(Amd64Reg::rbp)};
}

// Can TraceStops::Breakpoint emulate `insn` at its int3 (only such
// transfers get one)?
inline bool emulable(const decoder::Instruction& insn) {
  using decoder::ControlKind;
  if (insn.operand_size_override || !decoder::is_near_transfer(insn.kind)) return false;
  // loop/loope/loopne with ecx: whether the write clears rcx's upper half
  // is not worth guessing at; such code is stepped.
  if (insn.kind == ControlKind::Loop) return insn.loop_op == decoder::LoopOp::JumpIfZero || insn.counter_width == 8;
  return true;
}

// Transfers the tracer takes itself in a row within one stop (a transfer
// landing on a transfer); bounded so a `jmp .` or a `jmp *slot` to itself
// costs a stop or a step per round instead of hanging the stub.
constexpr int kMaxTakenInARow = 32;

// Does `insn` take its target from memory (a return slot, a pointer)? Such
// a target can change between a stop and the transfer's run.
inline bool target_in_memory(const decoder::Instruction& insn) {
  return insn.kind == decoder::ControlKind::Return || std::holds_alternative<decoder::MemoryOperand>(insn.indirect);
}

// Writes what an emulated transfer changed (rip, rsp, rcx): those alone
// are marked available, so the other registers and the FPU state stay.
// And eflags without RF: at a debug-register trace stop the kernel sets RF
// so that the trapping instruction runs on resume, but the thread now
// resumes elsewhere, where a hardware breakpoint must fire (RF would
// suppress it for that first instruction).
inline bool write_transfer(TracedThreadControl& control, pid_t tid, const protocol::RegisterFile& regs) {
  constexpr uint64_t kResumeFlag = 1ull << 16;  // eflags.RF
  protocol::RegisterFile out;
  for (Amd64Reg reg : {Amd64Reg::rip, Amd64Reg::rsp, Amd64Reg::rcx}) out.set_u64(reg, regs.get_u64(reg));
  if (regs.available(static_cast<unsigned>(Amd64Reg::eflags))) {
    out.set_u64(Amd64Reg::eflags, regs.get_u64(Amd64Reg::eflags) & ~kResumeFlag);
  }
  return control.write_registers(tid, out).ok();
}

// Does `insn` branch when run now? (Unpredictable counts as no: the step's
// landing decides then.)
inline bool predicts_branch(const decoder::Instruction& insn, const protocol::RegisterFile& regs,
                            decoder::MemoryReader& mem) {
  if (!insn.is_control_transfer()) return false;
  auto view = register_view(regs);
  auto next = decoder::next_pc(insn, view, mem);
  return next && next->taken();
}

}  // namespace stub::tracing::tracer_detail
