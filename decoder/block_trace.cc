#include "decoder/block_trace.h"

#include <algorithm>

namespace decoder {

BlockTrace::BlockTrace(uint64_t origin, std::size_t capacity_records, OverflowPolicy policy)
    : ring_(std::max<std::size_t>(capacity_records, 1)), oldest_begin_(origin), policy_(policy) {}

// The ring slot for the next branch, making room under DropOldest;
// ring_.size() when full under Stop.
std::size_t BlockTrace::slot_for_append() {
  if (full()) {
    if (policy_ == OverflowPolicy::Stop) return ring_.size();
    oldest_begin_ = ring_[head_].to;
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  ++count_;
  ++next_sequence_;
  return (head_ + count_ - 1) % ring_.size();
}

bool BlockTrace::append(uint64_t from, uint64_t to) {
  std::size_t slot = slot_for_append();
  if (slot == ring_.size()) return false;
  ring_[slot] = Branch{from, to};
  return true;
}

bool BlockTrace::append(uint64_t from, uint64_t to, const StackSnapshot& at_from) {
  if (stacks_.empty()) stacks_.resize(ring_.size());
  std::size_t slot = slot_for_append();
  if (slot == ring_.size()) return false;
  ring_[slot] = Branch{from, to};
  stacks_[slot] = at_from;
  return true;
}

const StackSnapshot& BlockTrace::stack_at(uint64_t seq) const {
  std::size_t offset = static_cast<std::size_t>(seq - first_sequence());
  return stacks_[(head_ + offset) % ring_.size()];
}

const Branch& BlockTrace::at(uint64_t seq) const {
  std::size_t offset = static_cast<std::size_t>(seq - first_sequence());
  return ring_[(head_ + offset) % ring_.size()];
}

std::vector<Block> BlockTrace::blocks(uint64_t from_seq, uint64_t current_pc) const {
  std::vector<Block> out;
  out.reserve(static_cast<std::size_t>(end_sequence() - from_seq) + 1);
  uint64_t begin = from_seq == first_sequence() ? oldest_begin_ : at(from_seq - 1).to;
  for (uint64_t seq = from_seq; seq < end_sequence(); ++seq) {
    const Branch& b = at(seq);
    out.push_back(Block{begin, b.from});
    begin = b.to;
  }
  out.push_back(Block{begin, current_pc});
  return out;
}

void BlockTrace::clear(uint64_t origin) {
  head_ = 0;
  count_ = 0;
  oldest_begin_ = origin;
}

void BlockTrace::resize(std::size_t capacity_records) {
  std::size_t capacity = std::max<std::size_t>(capacity_records, 1);
  std::vector<Branch> kept;
  std::vector<StackSnapshot> kept_stacks;
  std::size_t keep = std::min(count_, capacity);
  for (uint64_t seq = end_sequence() - keep; seq < end_sequence(); ++seq) {
    kept.push_back(at(seq));
    if (has_stacks()) kept_stacks.push_back(stack_at(seq));
  }
  if (keep < count_) oldest_begin_ = at(end_sequence() - keep - 1).to;
  ring_.assign(capacity, Branch{});
  std::copy(kept.begin(), kept.end(), ring_.begin());
  if (has_stacks()) {
    stacks_.assign(capacity, StackSnapshot{});
    std::copy(kept_stacks.begin(), kept_stacks.end(), stacks_.begin());
  }
  head_ = 0;
  count_ = keep;
}

std::size_t bts_records_for_bytes(uint64_t bytes) {
  return static_cast<std::size_t>(std::max<uint64_t>(bytes / BlockTrace::kBtsRecordSize, 1));
}

}  // namespace decoder
