#pragma once
// What reading a hardware trace buffer yields: taken branches, oldest
// first, and gaps where records were lost (ring overwritten before we read
// it, PERF_RECORD_LOST, a truncated AUX chunk). append_items() stores them
// in the same BlockTrace the software tracer fills.
#include <cstdint>
#include <vector>

#include "decoder/block_trace.h"

namespace stub::tracing {

struct TraceItem {
  bool gap = false;       // branches were lost here; branch.to: where execution
                          // resumed when known (a PT decoder knows), else 0
  decoder::Branch branch;
  bool operator==(const TraceItem&) const = default;
};
using TraceItems = std::vector<TraceItem>;

inline TraceItem branch_item(uint64_t from, uint64_t to) { return TraceItem{false, {from, to}}; }
inline TraceItem gap_item(uint64_t resumed_at = 0) { return TraceItem{true, {0, resumed_at}}; }

// User space is the lower half of the canonical address space; BTS still
// reports the returns from the kernel (sysret, iret) with a kernel `from`.
inline bool is_kernel_address(uint64_t addr) { return (addr >> 63) != 0; }

// A gap is stored as a branch from kGapAddress: the block that ends there
// ends below where it begins (or begins at an unmapped address), which both
// gdb's BTS decoder and our replay (decoder::BlockCache) treat as a gap, so
// the blocks around the loss are never silently joined. A gap followed by a
// branch b is stored as one record, (kGapAddress, b.from), then b: the block
// [b.from, b.from] keeps the branch instruction itself. A gap that knows
// where execution resumed (x) is stored as (kGapAddress, x): the block after
// it begins there.
inline constexpr uint64_t kGapAddress = decoder::kGapAddress;

void append_items(decoder::BlockTrace& trace, const TraceItems& items);

// Adds a gap unless the last item already is one.
void push_gap(TraceItems& items);

}  // namespace stub::tracing
