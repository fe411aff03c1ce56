#pragma once
// Which memory one x86-64 user-mode instruction may touch, for running it
// once and taking it back: restoring the general registers, rflags,
// fs_base/gs_base, xmm0-15 with mxcsr, and the bytes it may write puts the
// program back exactly. Instructions for which that is not true (system
// calls, traps, x87/MMX/AVX state, implicit or unbounded memory, faults
// that readable memory does not rule out) have no footprint.
// Capstone types stay out of this header; cs_insn is only forward-declared.
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/instruction.h"
#include "decoder/registers.h"

struct cs_insn;

namespace decoder {

struct MemoryTouch {
  uint64_t address = 0;  // linear address
  uint8_t size = 0;      // bytes
  bool written = false;  // may be written: these bytes must be saved to undo
  bool operator==(const MemoryTouch&) const = default;
};

// Internal to decoder/ (users call InstructionDecoder::footprint): `insn`
// was decoded with detail on and `classified` is classify_capstone's view
// of it; `regs` hold the values before it runs. nullopt: not undoable.
std::optional<std::vector<MemoryTouch>> capstone_footprint(const cs_insn& insn,
                                                           const Instruction& classified,
                                                           const RegisterSource& regs);

}  // namespace decoder
