#include "decoder/block_trace.h"

#include <algorithm>

namespace decoder {

BlockTrace::BlockTrace(uint64_t origin, std::size_t capacity_records, OverflowPolicy policy)
    : capacity_(std::max<std::size_t>(capacity_records, 1)), oldest_begin_(origin), policy_(policy) {}

void BlockTrace::drop_oldest() {
  oldest_begin_ = branches_.front().to;
  branches_.pop_front();
  if (!stacks_.empty()) stacks_.pop_front();
}

// Room for one more branch: under DropOldest the oldest goes; false when
// full under Stop.
bool BlockTrace::make_room() {
  if (!full()) return true;
  if (policy_ == OverflowPolicy::Stop) return false;
  drop_oldest();
  return true;
}

bool BlockTrace::append(uint64_t from, uint64_t to) {
  if (!make_room()) return false;
  branches_.push_back(Branch{from, to});
  ++next_sequence_;
  return true;
}

bool BlockTrace::append(uint64_t from, uint64_t to, const StackSnapshot& at_from) {
  if (!make_room()) return false;
  branches_.push_back(Branch{from, to});
  stacks_.push_back(at_from);
  ++next_sequence_;
  return true;
}

const StackSnapshot& BlockTrace::stack_at(uint64_t seq) const {
  return stacks_[static_cast<std::size_t>(seq - first_sequence())];
}

const Branch& BlockTrace::at(uint64_t seq) const {
  return branches_[static_cast<std::size_t>(seq - first_sequence())];
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
  branches_.clear();
  stacks_.clear();
  oldest_begin_ = origin;
}

void BlockTrace::resize(std::size_t capacity_records) {
  capacity_ = std::max<std::size_t>(capacity_records, 1);
  while (branches_.size() > capacity_) drop_oldest();
  branches_.shrink_to_fit();
  stacks_.shrink_to_fit();
}

std::size_t bts_records_for_bytes(uint64_t bytes) {
  return static_cast<std::size_t>(std::max<uint64_t>(bytes / BlockTrace::kBtsRecordSize, 1));
}

}  // namespace decoder
