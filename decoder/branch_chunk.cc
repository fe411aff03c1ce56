#include "decoder/branch_chunk.h"

#include <array>

namespace decoder {
namespace {

// Entries of the target predictor: enough for the branches of the hot code
// a chunk's span runs through, small enough to rebuild per chunk.
constexpr std::size_t kPredictorSize = 256;

std::size_t predictor_slot(uint64_t from) {
  return static_cast<std::size_t>((from * 0x9E3779B97F4A7C15ull) >> 56);
}

// Zigzag: small negative differences become small unsigned numbers.
uint64_t zigzag(uint64_t difference) {
  const int64_t d = static_cast<int64_t>(difference);
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}
uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

// The head carries a 64-bit zigzag value and two flags: 66 bits.
using Wide = unsigned __int128;

void put_varint(std::vector<uint8_t>& out, Wide value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value) | 0x80);
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

bool get_varint(const std::vector<uint8_t>& in, std::size_t& pos, Wide& value) {
  value = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (pos >= in.size()) return false;
    const uint8_t byte = in[pos++];
    value |= static_cast<Wide>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool get_u64(const std::vector<uint8_t>& in, std::size_t& pos, uint64_t& value) {
  Wide wide = 0;
  if (!get_varint(in, pos, wide) || (wide >> 64) != 0) return false;
  value = static_cast<uint64_t>(wide);
  return true;
}

}  // namespace

BranchChunkWriter::BranchChunkWriter(uint64_t previous_to, bool with_stacks)
    : predictor_(kPredictorSize), previous_to_(previous_to), with_stacks_(with_stacks) {}

void BranchChunkWriter::add(const Branch& branch, const StackSnapshot& stack) {
  Branch& predicted = predictor_[predictor_slot(branch.from)];
  const bool to_predicted = predicted == branch;
  const bool stack_same = !with_stacks_ || stack == previous_stack_;
  put_varint(bytes_, static_cast<Wide>(branch.from - previous_to_) << 2 |
                         Wide{to_predicted} << 1 | Wide{stack_same});
  if (!to_predicted) put_varint(bytes_, zigzag(branch.to - branch.from));
  if (!stack_same) {
    const bool rbp_changed = stack.rbp != previous_stack_.rbp;
    put_varint(bytes_, static_cast<Wide>(zigzag(stack.rsp - previous_stack_.rsp)) << 1 | Wide{rbp_changed});
    if (rbp_changed) put_varint(bytes_, zigzag(stack.rbp - previous_stack_.rbp));
    previous_stack_ = stack;
  }
  predicted = branch;
  previous_to_ = branch.to;
}

std::vector<uint8_t> BranchChunkWriter::take() {
  bytes_.shrink_to_fit();
  return std::move(bytes_);
}

bool decode_branch_chunk(const std::vector<uint8_t>& bytes, uint64_t previous_to, bool with_stacks,
                         std::size_t count, std::vector<Branch>& branches,
                         std::vector<StackSnapshot>& stacks) {
  branches.clear();
  stacks.clear();
  branches.reserve(count);
  if (with_stacks) stacks.reserve(count);
  std::array<Branch, kPredictorSize> predictor{};
  StackSnapshot stack;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < count; ++i) {
    Wide head = 0;
    if (!get_varint(bytes, pos, head) || (head >> 66) != 0) return false;
    Branch branch;
    branch.from = previous_to + static_cast<uint64_t>(head >> 2);
    Branch& predicted = predictor[predictor_slot(branch.from)];
    if (head & 2) {
      if (predicted.from != branch.from) return false;
      branch.to = predicted.to;
    } else {
      uint64_t z = 0;
      if (!get_u64(bytes, pos, z)) return false;
      branch.to = branch.from + unzigzag(z);
    }
    if (!(head & 1)) {
      if (!with_stacks) return false;
      Wide rsp_head = 0;
      if (!get_varint(bytes, pos, rsp_head) || (rsp_head >> 65) != 0) return false;
      stack.rsp += unzigzag(static_cast<uint64_t>(rsp_head >> 1));
      if (rsp_head & 1) {
        uint64_t z = 0;
        if (!get_u64(bytes, pos, z)) return false;
        stack.rbp += unzigzag(z);
      }
    }
    predicted = branch;
    previous_to = branch.to;
    branches.push_back(branch);
    if (with_stacks) stacks.push_back(stack);
  }
  return pos == bytes.size();
}

}  // namespace decoder
