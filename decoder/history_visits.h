#pragma once
// Counting how often an instruction runs between two points of a thread's
// history: what re-executing a checkpoint to an exact point needs (a
// breakpoint on the point's pc, hit that many times).
//
// A point is (sequence, pc): block `sequence` of the BlockTrace (the
// instructions from the target of branch sequence-1 through branch
// sequence's `from`; see decoder/replay_history.h), at the instruction at
// `pc`, about to run. A block runs straight through ascending addresses
// (only taken branches end one), so points order by (sequence, pc).
#include <cstdint>
#include <optional>
#include <utility>

#include "decoder/block_trace.h"

namespace decoder {

struct HistoryPoint {
  uint64_t sequence = 0;
  uint64_t pc = 0;
  bool operator==(const HistoryPoint&) const = default;
  auto operator<=>(const HistoryPoint&) const = default;
};

// [begin, end] of block `sequence`; the live block (end_sequence()) ends at
// `live_pc`. nullopt outside the retained history.
std::optional<Block> history_block(const BlockTrace& trace, uint64_t sequence, uint64_t live_pc);

// How many times the instruction at `to.pc` runs from `from` through `to`,
// both included: the hit count a breakpoint at to.pc needs, for a copy
// standing at `from`, to stop at `to`. nullopt when `from` is older than
// the retained history, `to` precedes `from`, or a block between them
// touches [avoid.first, avoid.second) (code whose run the history cannot
// repeat, such as the vDSO's; an empty range avoids nothing).
std::optional<uint64_t> visits_between(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from,
                                       HistoryPoint to, std::pair<uint64_t, uint64_t> avoid = {0, 0});

// Whether a re-run from `from` through `to` may jump into [low, high): a
// block after `from`'s begins there (the target of a taken branch). Where
// the run starts is the runner's to check. True when it cannot be told
// (outside the retained history).
// What overwriting those bytes for the re-run needs to know
// (decoder/counting_patch.h).
bool enters_inside(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from, HistoryPoint to, uint64_t low,
                   uint64_t high);

// Where the instruction at `pc` runs for the `n`-th time counting from
// `from` (included): the inverse of visits_between. nullopt when it does
// not run that often before the live position.
std::optional<HistoryPoint> nth_visit(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from, uint64_t pc,
                                      uint64_t n);

}  // namespace decoder
