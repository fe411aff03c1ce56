#include "decoder/history_visits.h"

namespace decoder {

std::optional<Block> history_block(const BlockTrace& trace, uint64_t sequence, uint64_t live_pc) {
  if (sequence < trace.first_sequence() || sequence > trace.end_sequence()) return std::nullopt;
  Block block;
  block.begin = sequence == trace.first_sequence() ? trace.oldest_begin() : trace.at(sequence - 1).to;
  block.end = sequence == trace.end_sequence() ? live_pc : trace.at(sequence).from;
  return block;
}

std::optional<uint64_t> visits_between(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from,
                                       HistoryPoint to, std::pair<uint64_t, uint64_t> avoid) {
  if (to < from) return std::nullopt;
  uint64_t count = 0;
  for (uint64_t seq = from.sequence; seq <= to.sequence; ++seq) {
    auto block = history_block(trace, seq, live_pc);
    if (!block) return std::nullopt;
    const uint64_t low = seq == from.sequence ? from.pc : block->begin;
    const uint64_t high = seq == to.sequence ? to.pc : block->end;
    if (low > high) continue;
    if (avoid.first < avoid.second && low < avoid.second && high >= avoid.first) return std::nullopt;
    if (to.pc >= low && to.pc <= high) ++count;
  }
  return count;
}

bool enters_inside(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from, HistoryPoint to, uint64_t low,
                   uint64_t high) {
  auto inside = [&](uint64_t pc) { return pc >= low && pc < high; };
  if (to < from) return true;
  for (uint64_t seq = from.sequence + 1; seq <= to.sequence; ++seq) {
    auto block = history_block(trace, seq, live_pc);
    if (!block || inside(block->begin)) return true;
  }
  return false;
}

std::optional<HistoryPoint> nth_visit(const BlockTrace& trace, uint64_t live_pc, HistoryPoint from, uint64_t pc,
                                      uint64_t n) {
  if (n == 0) return std::nullopt;
  for (uint64_t seq = from.sequence; seq <= trace.end_sequence(); ++seq) {
    auto block = history_block(trace, seq, live_pc);
    if (!block) return std::nullopt;
    const uint64_t low = seq == from.sequence ? from.pc : block->begin;
    if (pc >= low && pc <= block->end && --n == 0) return HistoryPoint{seq, pc};
  }
  return std::nullopt;
}

}  // namespace decoder
