#pragma once
// What a branch trace is made of: taken branches, the blocks between them,
// and the stack registers the software tracer saw at each branch.
#include <cstdint>

namespace decoder {

// Where a branch "comes from" when the trace lost what ran (a hardware
// trace's gap, a sealed chunk whose code changed): no block ends at 0, so
// readers (gdb's BTS decoder, BlockCache) see a gap, never joined blocks.
inline constexpr uint64_t kGapAddress = 0;

struct Branch {
  uint64_t from = 0;  // address of the branch instruction (or where the thread was interrupted)
  uint64_t to = 0;    // where execution continued
  bool operator==(const Branch&) const = default;
};

// A block as gdb's BTS format describes it: from a branch target (`begin`)
// to the address of the last instruction executed before the next taken
// branch (`end`, inclusive).
struct Block {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool operator==(const Block&) const = default;
};

// rsp and rbp of the thread at a branch, before it executed. The software
// tracer stops there anyway and records them, so replay can rebuild the
// stack pointer and frame pointer at every instruction of history (hardware
// traces carry none).
struct StackSnapshot {
  uint64_t rsp = 0;
  uint64_t rbp = 0;
  bool operator==(const StackSnapshot&) const = default;
};

// A branch with the stack registers before it: one record of the
// translating tracer's log (decoder/block_translator.h LogRecord, the same
// 32 bytes), stored by BlockTrace::append_stacked a run at a time.
struct StackedBranch {
  Branch branch;
  StackSnapshot stack;
};

}  // namespace decoder
