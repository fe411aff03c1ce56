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
#include <vector>

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

// A stretch of a thread's history read once, from a point through block
// `last`: what re-running a copy across it needs to know, answered from
// memory (each pass over the history reads ~20-40 ns a block: counting
// visits, candidates and jumps one pass each made a 100,000-branch
// stretch take ~20 ms).
class HistoryStretch {
 public:
  // nullopt when a block is outside the retained history.
  static std::optional<HistoryStretch> read(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from,
                                            uint64_t last);

  HistoryPoint from() const { return from_; }
  // visits_between(a, to, avoid), for `a` and `to` in the stretch (nullopt
  // outside, or where visits_between gives nullopt).
  std::optional<uint64_t> visits(HistoryPoint a, HistoryPoint to, std::pair<uint64_t, uint64_t> avoid = {0, 0}) const;
  std::optional<uint64_t> visits(HistoryPoint to) const { return visits(from_, to); }
  // enters_inside(a, to, low, high), for `a` and `to` in the stretch (true
  // outside it).
  bool enters_inside(HistoryPoint a, HistoryPoint to, uint64_t low, uint64_t high) const;
  bool enters_inside(HistoryPoint to, uint64_t low, uint64_t high) const { return enters_inside(from_, to, low, high); }
  // nth_visit(a, pc, n) within the stretch (nullopt past its last block).
  std::optional<HistoryPoint> nth_visit(HistoryPoint a, uint64_t pc, uint64_t n) const;
  // Whether a block from `from` through `to` touches [avoid.first, avoid.second).
  bool touches(HistoryPoint to, std::pair<uint64_t, uint64_t> avoid) const;

  // The starts of blocks `first` through the last (sequences), one per pc,
  // that a re-run from `from` reaches with the fewest runs of their pc
  // (visits(), exact), fewest first and among equals the latest; at most
  // `most`. Where a re-run is cheapest to stop: a copy that cannot count
  // a pc's runs itself stops at each (stub/process/process_copy.h).
  struct VisitedPoint {
    HistoryPoint at;
    uint64_t visits = 0;
  };
  std::vector<VisitedPoint> fewest_visited(uint64_t first, std::size_t most) const;

 private:
  HistoryStretch(HistoryPoint from, std::vector<Block> blocks) : from_(from), blocks_(std::move(blocks)) {}
  bool holds(HistoryPoint point) const {
    return !(point < from_) && point.sequence - from_.sequence < blocks_.size();
  }
  // Block `seq` of the history, or nullopt outside the stretch.
  std::optional<Block> block_at(uint64_t seq) const;
  // Block `index` (from.sequence + index) as a re-run from `a` through `to`
  // passes it: the one holding `a` from its pc, the one holding `to` up to
  // its pc.
  std::pair<uint64_t, uint64_t> span(std::size_t index, HistoryPoint a, HistoryPoint to) const;

  HistoryPoint from_;
  std::vector<Block> blocks_;  // from.sequence onwards
};

}  // namespace decoder
