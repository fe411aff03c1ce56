#pragma once
// Internal to decoder/: turns Capstone's detail into an Instruction.
#include <capstone/capstone.h>

#include "decoder/instruction.h"

namespace decoder {

// `insn` must have been decoded by `handle` with CS_OPT_DETAIL on.
Instruction classify_capstone(csh handle, const cs_insn& insn);

// One memory operand of an instruction ending at `next_address` (RIP-relative
// operands are resolved against it). std::monostate when a base or index
// register is not a 64/32-bit general register.
IndirectOperand convert_memory(const cs_x86& x86, const x86_op_mem& mem,
                               uint8_t access_size, uint64_t next_address);

}  // namespace decoder
