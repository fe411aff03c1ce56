#include "decoder/history_visits.h"

#include <algorithm>
#include <unordered_map>

namespace decoder {

std::optional<Block> history_block(const BlockTrace& trace, uint64_t sequence, uint64_t live_pc) {
  if (sequence < trace.first_sequence() || sequence > trace.end_sequence()) return std::nullopt;
  Block block;
  block.begin = sequence == trace.first_sequence() ? trace.oldest_begin() : trace.at(sequence - 1).to;
  block.end = sequence == trace.end_sequence() ? live_pc : trace.at(sequence).from;
  return block;
}

namespace {

// Whether [low, high], the part of a block a re-run passes, is unknown:
// where the trace lost branches (a gap: a block that ends at, or begins
// after, kGapAddress, or ends below its start) nothing says which pcs ran,
// nor how often. Counting it as no visits sent copies to an earlier visit
// of the pc than the history's (a program that rewrote its code).
bool unknown(uint64_t low, uint64_t high) { return low == kGapAddress || high == kGapAddress || low > high; }

// The passes over a stretch of history, written once over where its blocks
// come from: `block_at(seq)` is block `seq`, or nullopt where the source
// holds none (the trace's retained history, or a HistoryStretch).

template <typename BlockAt>
std::optional<uint64_t> count_visits(const BlockAt& block_at, HistoryPoint from, HistoryPoint to,
                                     std::pair<uint64_t, uint64_t> avoid) {
  if (to < from) return std::nullopt;
  uint64_t count = 0;
  for (uint64_t seq = from.sequence; seq <= to.sequence; ++seq) {
    const std::optional<Block> block = block_at(seq);
    if (!block) return std::nullopt;
    const uint64_t low = seq == from.sequence ? from.pc : block->begin;
    const uint64_t high = seq == to.sequence ? to.pc : block->end;
    if (unknown(low, high)) return std::nullopt;
    if (avoid.first < avoid.second && low < avoid.second && high >= avoid.first) return std::nullopt;
    if (to.pc >= low && to.pc <= high) ++count;
  }
  return count;
}

template <typename BlockAt>
bool any_enters_inside(const BlockAt& block_at, HistoryPoint from, HistoryPoint to, uint64_t low, uint64_t high) {
  if (to < from) return true;
  for (uint64_t seq = from.sequence + 1; seq <= to.sequence; ++seq) {
    const std::optional<Block> block = block_at(seq);
    if (!block || unknown(block->begin, block->end) || (block->begin >= low && block->begin < high)) return true;
  }
  return false;
}

template <typename BlockAt>
std::optional<HistoryPoint> find_nth_visit(const BlockAt& block_at, HistoryPoint from, uint64_t pc, uint64_t n) {
  if (n == 0) return std::nullopt;
  for (uint64_t seq = from.sequence;; ++seq) {
    const std::optional<Block> block = block_at(seq);
    if (!block) return std::nullopt;
    const uint64_t low = seq == from.sequence ? from.pc : block->begin;
    if (unknown(low, block->end)) return std::nullopt;
    if (pc >= low && pc <= block->end && --n == 0) return HistoryPoint{seq, pc};
  }
}

}  // namespace

std::optional<uint64_t> visits_between(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from,
                                       HistoryPoint to, std::pair<uint64_t, uint64_t> avoid) {
  return count_visits([&](uint64_t seq) { return history_block(trace, seq, live_pc); }, from, to, avoid);
}

bool enters_inside(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from, HistoryPoint to, uint64_t low,
                   uint64_t high) {
  return any_enters_inside([&](uint64_t seq) { return history_block(trace, seq, live_pc); }, from, to, low, high);
}

std::optional<HistoryPoint> nth_visit(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from, uint64_t pc,
                                      uint64_t n) {
  return find_nth_visit([&](uint64_t seq) { return history_block(trace, seq, live_pc); }, from, pc, n);
}

std::optional<HistoryStretch> HistoryStretch::read(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from,
                                                   uint64_t last) {
  if (last < from.sequence || last > trace.end_sequence()) return std::nullopt;
  auto first = history_block(trace, from.sequence, live_pc);
  if (!first) return std::nullopt;
  std::vector<Block> blocks;
  blocks.reserve(static_cast<std::size_t>(last - from.sequence + 1));
  // One read of each branch: a block begins where the branch before it went.
  uint64_t begin = first->begin;
  for (uint64_t seq = from.sequence; seq <= last; ++seq) {
    if (seq == trace.end_sequence()) {
      blocks.push_back(Block{begin, live_pc});
      break;
    }
    const Branch branch = trace.at(seq);
    blocks.push_back(Block{begin, branch.from});
    begin = branch.to;
  }
  return HistoryStretch(from, std::move(blocks));
}

std::pair<uint64_t, uint64_t> HistoryStretch::span(std::size_t index, HistoryPoint a, HistoryPoint to) const {
  const uint64_t seq = from_.sequence + index;
  return {seq == a.sequence ? a.pc : blocks_[index].begin, seq == to.sequence ? to.pc : blocks_[index].end};
}

std::optional<Block> HistoryStretch::block_at(uint64_t seq) const {
  if (seq < from_.sequence || seq - from_.sequence >= blocks_.size()) return std::nullopt;
  return blocks_[seq - from_.sequence];
}

std::optional<uint64_t> HistoryStretch::visits(HistoryPoint a, HistoryPoint to,
                                               std::pair<uint64_t, uint64_t> avoid) const {
  if (!holds(a) || !holds(to)) return std::nullopt;
  return count_visits([this](uint64_t seq) { return block_at(seq); }, a, to, avoid);
}

bool HistoryStretch::enters_inside(HistoryPoint a, HistoryPoint to, uint64_t low, uint64_t high) const {
  if (!holds(a) || !holds(to)) return true;
  return any_enters_inside([this](uint64_t seq) { return block_at(seq); }, a, to, low, high);
}

std::optional<HistoryPoint> HistoryStretch::nth_visit(HistoryPoint a, uint64_t pc, uint64_t n) const {
  if (!holds(a)) return std::nullopt;
  return find_nth_visit([this](uint64_t seq) { return block_at(seq); }, a, pc, n);
}

bool HistoryStretch::touches(HistoryPoint to, std::pair<uint64_t, uint64_t> avoid) const {
  if (avoid.first >= avoid.second) return false;
  if (!holds(to)) return true;
  for (std::size_t i = 0; i <= to.sequence - from_.sequence; ++i) {
    auto [low, high] = span(i, from_, to);
    if (unknown(low, high) || (low < avoid.second && high >= avoid.first)) return true;
  }
  return false;
}

std::vector<HistoryStretch::VisitedPoint> HistoryStretch::fewest_visited(uint64_t first, std::size_t most) const {
  // One pass counts block starts only (a pc also runs where a block passes
  // through it); the few that count fewest are then counted exactly.
  std::unordered_map<uint64_t, uint64_t> starts;
  std::unordered_map<uint64_t, VisitedPoint> latest;  // by pc, from `first` on
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const uint64_t seq = from_.sequence + i;
    if (i == 0 && from_.pc != blocks_[0].begin) continue;  // the copy starts inside it
    const uint64_t seen = ++starts[blocks_[i].begin];
    if (seq >= first) latest[blocks_[i].begin] = VisitedPoint{HistoryPoint{seq, blocks_[i].begin}, seen};
  }
  auto fewer = [](const VisitedPoint& a, const VisitedPoint& b) {
    return a.visits != b.visits ? a.visits < b.visits : b.at < a.at;
  };
  std::vector<VisitedPoint> points;
  points.reserve(latest.size());
  for (const auto& entry : latest) points.push_back(entry.second);
  std::sort(points.begin(), points.end(), fewer);
  if (points.size() > 2 * most) points.resize(2 * most);
  // A point past a gap has no known count: no re-run goes there.
  std::vector<VisitedPoint> counted;
  for (VisitedPoint point : points) {
    if (const std::optional<uint64_t> visited = visits(point.at)) {
      point.visits = *visited;
      counted.push_back(point);
    }
  }
  points = std::move(counted);
  std::sort(points.begin(), points.end(), fewer);
  if (points.size() > most) points.resize(most);
  return points;
}

}  // namespace decoder
