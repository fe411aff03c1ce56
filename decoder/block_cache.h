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

class BlockCache {
 public:
  // Both must outlive the cache. Code is assumed not to change while the
  // cache lives (clear() it when the program ran).
  BlockCache(InstructionDecoder& decoder, CodeReader& code) : decoder_(decoder), code_(code) {}

  // The decoded block; the reference stays valid until clear().
  const DecodedBlock& get(const Block& block);
  // One instruction (e.g. a branch whose block is not needed otherwise).
  std::optional<ReplayInstruction> instruction_at(uint64_t addr);

  std::size_t size() const { return blocks_.size(); }
  void clear() { blocks_.clear(); }

 private:
  struct KeyHash {
    std::size_t operator()(const Block& b) const {
      return std::hash<uint64_t>()(b.begin * 0x9e3779b97f4a7c15ULL ^ b.end);
    }
  };
  DecodedBlock decode(const Block& block);

  InstructionDecoder& decoder_;
  CodeReader& code_;
  std::unordered_map<Block, DecodedBlock, KeyHash> blocks_;
};

}  // namespace decoder
