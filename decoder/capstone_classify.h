#pragma once
// Internal to decoder/: turns Capstone's detail into an Instruction.
#include <capstone/capstone.h>

#include "decoder/instruction.h"

namespace decoder {

// `insn` must have been decoded by `handle` with CS_OPT_DETAIL on.
Instruction classify_capstone(csh handle, const cs_insn& insn);

}  // namespace decoder
