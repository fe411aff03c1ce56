#pragma once
// Decoded blocks for replay, cached by (begin, end): loops run the same
// blocks again and again, so a history of millions of instructions usually
// has only a few thousand distinct blocks. Each instruction keeps just what
// replay needs (address, size, control kind, stack effect).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/code_reader.h"
#include "decoder/instruction.h"
#include "decoder/instruction_decoder.h"

namespace decoder {

struct ReplayInstruction {
  uint64_t address = 0;
  uint8_t size = 0;
  ControlKind kind = ControlKind::None;
  std::optional<uint64_t> target;
  StackEffect stack;
  uint64_t next_address() const { return address + size; }
};

struct DecodedBlock {
  std::vector<ReplayInstruction> instructions;
  // True when decoding from `begin` landed exactly on `end`; otherwise the
  // trace and the code disagree here (a gap): replay treats it as the start
  // of history and `instructions` holds whatever decoded before the problem.
  bool complete = false;
};

// `block` decoded from `code`: the rules BlockCache::get keeps.
DecodedBlock decode_block(InstructionDecoder& decoder, CodeReader& code, const Block& block);

// A hash of what replay takes from a block's instructions (addresses,
// sizes, kinds, targets, stack effects, pushed immediates): equal where
// two decodings of it would replay the same. nullopt for an incomplete one.
std::optional<uint64_t> layout_hash(const DecodedBlock& block);

class BlockCache {
 public:
  // Both must outlive the cache (or `code` until use_reader() names
  // another). Code is assumed not to change while the cache reads through
  // one reader (clear() it when the program ran, or use_reader()).
  BlockCache(InstructionDecoder& decoder, CodeReader& code) : decoder_(decoder), code_(&code) {}

  // The decoded block; the reference stays valid until clear() or use_reader().
  const DecodedBlock& get(const Block& block);
  // layout_hash of `block` as it decodes now.
  std::optional<uint64_t> layout_hash_of(const Block& block) { return layout_hash(get(block)); }
  // One instruction (e.g. a branch whose block is not needed otherwise).
  std::optional<ReplayInstruction> instruction_at(uint64_t addr);

  // Reads through `code` from now on, keeping the blocks decoded so far:
  // each is used again only where `code` holds the very bytes it was
  // decoded from (compared at its first use after the switch), else
  // decoded again. For a cache that outlives many short-lived readers of
  // code that may have changed in between (packing chunk after chunk): a
  // compare of a block's few bytes instead of Capstone over each of its
  // instructions. Forgets everything once it holds kMaxKeptBlocks.
  void use_reader(CodeReader& code);
  static constexpr std::size_t kMaxKeptBlocks = 1 << 16;
  static constexpr uint64_t kMaxKeptBlockBytes = 4096;

  std::size_t size() const { return blocks_.size(); }
  void clear() { blocks_.clear(); }

 private:
  struct KeyHash {
    std::size_t operator()(const Block& b) const {
      return std::hash<uint64_t>()(b.begin * 0x9e3779b97f4a7c15ULL ^ b.end);
    }
  };
  struct Entry {
    DecodedBlock block;
    std::vector<uint8_t> bytes;  // from block.begin to the last instruction's end
    uint64_t checked = 0;        // the reader generation that decoded or checked it
  };
  DecodedBlock decode(const Block& block);
  Entry decoded_entry(const Block& block);
  bool holds_bytes(const Entry& entry);

  InstructionDecoder& decoder_;
  CodeReader* code_;
  uint64_t generation_ = 0;
  std::vector<uint8_t> scratch_;  // the bytes holds_bytes() reads
  std::unordered_map<Block, Entry, KeyHash> blocks_;
};

}  // namespace decoder
