#pragma once
// A run of taken branches (and, optionally, the rsp/rbp snapshot at each)
// packed into bytes, so that a long history costs a few bytes per branch
// instead of the 32 of the plain structs.
//
// Each branch is stored relative to what came before it in the chunk:
//   head  = varint((from - previous to) << 2 | to_predicted << 1 | stack_predicted)
//   [varint(zigzag(to - from))]                       unless to_predicted
//   [varint(zigzag(rsp - previous rsp) << 1 | rbp_changed)
//    [varint(zigzag(rbp - previous rbp))]]            unless stack_predicted
// `from - previous to` is the length of the block the branch ends (less
// its last instruction): under 32 bytes it fits the head's first byte; it
// wraps (10 bytes) only where a trace has a gap or an interrupt. `to` is
// predicted from a small table of the last target seen from the same
// address (direct jumps, calls, loops, and most returns repeat). So is how
// far rsp and rbp moved since the branch before: as far as at the last
// branch the same table entry saw (mostly from the same address: the
// pushes and pops of the block it ends; none before the first).
// Predicting the move, not only "unchanged", took the branches of a Lua
// recording that spell their stack out from 46% to 17%, and its bytes a
// branch from 3.72 to 3.00 (encoding took 8% longer, not counting the
// memory saved). A branch of a hot loop costs one byte.
//
// A chunk decodes only from its start (the predictor and the previous
// values are rebuilt on the way): the store keeps chunks short and caches
// decoded ones.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decoder/branch.h"

namespace decoder {

class BranchChunkWriter {
 public:
  // `previous_to`: the target of the branch before the chunk's first (where
  // its first block begins).
  BranchChunkWriter(uint64_t previous_to, bool with_stacks);
  void add(const Branch& branch, const StackSnapshot& stack);
  // The same for a run, in order; `stacks` holds one a branch, or none
  // without stacks. One loop with the work of add inlined: called once a
  // branch, add's own entry and exit were a tenth of the encoding.
  void add(std::span<const Branch> branches, std::span<const StackSnapshot> stacks);
  // The same for branches stored with their stacks (kept when the writer
  // has stacks).
  void add(std::span<const StackedBranch> branches);
  std::vector<uint8_t> take();  // the bytes; the writer is spent
  // Entries of the target predictor: enough for the branches of the hot
  // code a chunk's span runs through, small enough to rebuild per chunk.
  static constexpr std::size_t kPredictorSize = 256;
  // An entry: the last branch whose address has its slot, and how far rsp
  // and rbp had moved since the branch before it.
  struct Prediction {
    uint64_t from = 0;
    uint64_t to = 0;
    uint64_t rsp_moved = 0;
    uint64_t rbp_moved = 0;
  };
  std::size_t size() const { return size_; }

 private:
  void grow(std::size_t need);  // to at least `need` bytes of room

  std::unique_ptr<uint8_t[]> bytes_;  // capacity_ bytes, the first size_ written
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  std::array<Prediction, kPredictorSize> predictor_{};  // in the writer: no allocation a chunk
  uint64_t previous_to_;
  StackSnapshot previous_stack_;
  bool with_stacks_;
};

// Decodes `count` branches of a chunk written with the same `previous_to`
// and `with_stacks`; `stacks` is left empty without stacks. False when the
// bytes end early or hold garbage (a store bug, not user input).
bool decode_branch_chunk(const std::vector<uint8_t>& bytes, uint64_t previous_to, bool with_stacks,
                         std::size_t count, std::vector<Branch>& branches,
                         std::vector<StackSnapshot>& stacks);

// The rsp/rbp snapshots of a chunk alone, for chunks whose branches are
// stored elsewhere (PT packets, decoder/pt_chunk.h), with the same delta
// varints: for each change, varint(branches since the last change with the
// same snapshot), then the rsp and rbp differences as above. A loop whose
// stack stays put costs nothing a branch.
std::vector<uint8_t> encode_stack_stream(const std::vector<StackSnapshot>& stacks);
// False when the bytes end early, hold garbage, or describe more than
// `count` snapshots (a store bug, not user input).
bool decode_stack_stream(const uint8_t* bytes, std::size_t size, std::size_t count,
                         std::vector<StackSnapshot>& stacks);

}  // namespace decoder
