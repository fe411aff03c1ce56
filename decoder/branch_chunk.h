#pragma once
// A run of taken branches (and, optionally, the rsp/rbp snapshot at each)
// packed into bytes, so that a long history costs a few bytes per branch
// instead of the 32 of the plain structs.
//
// Each branch is predicted whole from where its block began (the target
// of the branch before it): a table remembers, for a block's start, the
// branch that last ended the block (its address, its target) and how far
// rsp and rbp had moved since the branch before. A branch equal to its
// prediction in all three costs nothing but a count; the others are
// written as
//   head = varint(predicted before it << 3 | from_predicted << 2
//                 | to_predicted << 1 | stack_predicted)
//   [varint(zigzag(from - previous to))]                unless from_predicted
//   [varint(zigzag(to - from))]                         unless to_predicted
//   [varint(zigzag(rsp - previous rsp) << 1 | rbp_changed)
//    [varint(zigzag(rbp - previous rbp))]]              unless stack_predicted
// and the chunk ends with varint(predicted after the last << 3 | 7) (the
// three flags set: no branch is written so). `from - previous to` is the
// length of the block (less its last instruction; negative only where a
// trace has a gap or an interrupt). A block start not in the table
// predicts nothing of its branch but an unmoved stack.
// Keyed by the block's start, not the branch's address, the prediction
// holds the block's end too: a loop's blocks, a call and its return, and
// most of an interpreter's dispatches repeat what they did last time, and
// a run of them costs a byte. A Lua recording (every 16th chunk of
// real_programs.lua at n = 90,000): 2.99 bytes a branch with a table of
// 256 keyed by the branch's address (the format before), 1.58 with one
// of 1,024 keyed so. A whole recording of it: 1.63 with 1,024 entries,
// 1.57 with these 4,096.
//
// A chunk decodes only from its start (the predictor and the previous
// values are rebuilt on the way): the store keeps chunks short and caches
// decoded ones.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decoder/branch.h"

namespace decoder {

// How far ahead of the record being read a tracer's log (StackedBranch
// records, written on another core: from memory after non-temporal
// stores, from that core's cache after prefetched plain ones,
// decoder/block_translator.h "Log stores") is prefetched: 12 KiB
// (recording Lua, 160 records gave a third less of the gain, 1,024 no
// more).
inline constexpr std::size_t kLogPrefetchRecords = 384;
// Called for each record `i` of a log of `n` read in order: prefetches a
// line (two records) kLogPrefetchRecords ahead every other record.
// (A plain inline function: GCC 12 dropped the same prefetch written in a
// lambda; the object code must hold prefetcht0.)
[[gnu::always_inline]] inline void prefetch_log_ahead(const StackedBranch* log, std::size_t i, std::size_t n) {
  if ((i & 1) == 0) __builtin_prefetch(log + std::min(i + kLogPrefetchRecords, n - 1));
}

class BranchChunkWriter {
 public:
  // `previous_to`: the target of the branch before the chunk's first (where
  // its first block begins).
  BranchChunkWriter(uint64_t previous_to, bool with_stacks);
  ~BranchChunkWriter();  // its predictor kept for the thread's next writer
  BranchChunkWriter(BranchChunkWriter&&) = default;
  BranchChunkWriter& operator=(BranchChunkWriter&&) = default;
  void add(const Branch& branch, const StackSnapshot& stack);
  // The same for a run, in order; `stacks` holds one a branch, or none
  // without stacks. One loop with the work of add inlined: called once a
  // branch, add's own entry and exit were a tenth of the encoding.
  void add(std::span<const Branch> branches, std::span<const StackSnapshot> stacks);
  // The same for branches stored with their stacks (kept when the writer
  // has stacks).
  void add(std::span<const StackedBranch> branches);
  std::vector<uint8_t> take();  // the bytes; the writer is spent
  // Entries of the predictor: enough for the blocks of the hot code a
  // chunk's span runs through (256 lost a third of Lua's predictions to
  // blocks sharing a slot; 4,096 against 1,024: Lua's store 4% smaller,
  // its recording no slower, a chunk's blocks sharing fewer).
  static constexpr std::size_t kPredictorBits = 12;
  static constexpr std::size_t kPredictorSize = std::size_t{1} << kPredictorBits;
  // An entry: the branch that last ended the block starting at `key`, and
  // how far rsp and rbp had moved since the branch before it. In use only
  // while `generation` is the table's: a table serves chunk after chunk
  // without being cleared (192 KiB a chunk of 4,096 branches).
  // (from and to, rsp_moved and rbp_moved: two 16-byte pairs, compared
  // with a log record's as two vectors.)
  struct Prediction {
    alignas(16) uint64_t from = 0;
    uint64_t to = 0;
    uint64_t rsp_moved = 0;
    uint64_t rbp_moved = 0;
    uint64_t key = 0;
    uint64_t generation = 0;
  };
  struct Predictor {
    std::array<Prediction, kPredictorSize> entries{};
    uint64_t generation = 1;  // entries of other generations are empty
  };
  // The bytes so far, not counting the branches predicted since the last
  // written one (take() writes their count).
  std::size_t size() const { return size_; }

 private:
  void grow(std::size_t need);  // to at least `need` bytes of room

  std::unique_ptr<uint8_t[]> bytes_;  // capacity_ bytes, the first size_ written
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  // The writer's own (a spare one of its thread's when there is one: no
  // allocation or clearing a chunk), so that writers alive at once never
  // share entries.
  std::unique_ptr<Predictor> predictor_;
  uint64_t previous_to_;
  StackSnapshot previous_stack_;
  uint64_t predicted_run_ = 0;  // branches predicted since the last written one
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
