#pragma once
// Where does the block starting at an address end? The software tracer asks
// this at every taken branch, so the answers are cached by start address.
// A cached answer stays valid until the code changes: exec, or a system
// call that may store into code (SoftwareTracer::after_system_call);
// invalidate() drops them all. Code a plain store changes (set_uncached)
// is never cached: it is decoded again at every ask.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "decoder/block_cache.h"
#include "decoder/code_reader.h"
#include "decoder/instruction.h"
#include "decoder/instruction_decoder.h"
#include "stub/tracing/translatable_code.h"

namespace stub::tracing {

struct BlockEnd {
  enum class Kind {
    Transfer,     // `insn` is the first control transfer at or after the start
    Checkpoint,   // no transfer within the scan limit: `insn` is the last scanned
    Undecodable,  // the bytes at `address` do not decode (or are unreadable)
    // `insn` reads a value re-execution cannot repeat (rdtsc, rdtscp,
    // rdrand, rdseed): the tracer steps it, and the stop after it marks the
    // history so that no copy of the program re-runs it
    // (stub/tracing/checkpoints.h).
    Unrepeatable,
  };
  Kind kind = Kind::Undecodable;
  uint64_t address = 0;
  decoder::Instruction insn;  // valid unless Undecodable
  // How the instructions before `insn` move rsp, when they only push, pop
  // or add to it and leave rbp alone: rsp at the start is rsp at any point
  // of the block minus the part of this delta run up to there. nullopt:
  // something else touches them.
  std::optional<int64_t> rsp_delta = 0;
};

// rdtsc, rdtscp, rdrand, rdseed: see BlockEnd::Kind::Unrepeatable.
bool reads_unrepeatable_value(const decoder::Instruction& insn);

// rsp's change by `insn` when it is a plain push, pop or adjustment that
// leaves rbp alone; nullopt otherwise.
std::optional<int64_t> plain_rsp_delta(const decoder::Instruction& insn);

class BlockCache {
 public:
  // A block with more instructions than this is cut into checkpoints: one
  // extra stop per this many instructions bounds the decode work per stop.
  static constexpr std::size_t kMaxScan = 4096;

  explicit BlockCache(decoder::InstructionDecoder decoder) : decoder_(std::move(decoder)) {}

  // The end of the block starting at `start`, reading code through `code`.
  BlockEnd block_end(uint64_t start, decoder::CodeReader& code);
  // The instruction at `addr` (cached).
  std::optional<decoder::Instruction> instruction_at(uint64_t addr, decoder::CodeReader& code);

  void invalidate() {
    ends_.clear();
    transfers_.clear();
  }
  std::size_t size() const { return ends_.size(); }
  // decoder::layout_hash of `block` as `code` holds it now (never cached).
  std::optional<uint64_t> layout_hash(const decoder::Block& block, decoder::CodeReader& code) {
    return decoder::layout_hash(decoder::decode_block(decoder_, code, block));
  }
  // Code the program changes with plain stores (writable_code): answers
  // that read it are dropped, and from now on neither kept nor taken from
  // the cache.
  void set_uncached(AddressRanges ranges);
  // Whether a cached answer read code in [begin, end) (a block or an
  // instruction starting there, or a block ending there).
  bool read_code_in(uint64_t begin, uint64_t end) const;

 private:
  BlockEnd scan(uint64_t start, decoder::CodeReader& code);
  // Whether decoding from `begin` through the instruction at `last` (any
  // of its lengths) read code set_uncached named.
  bool reads_uncached(uint64_t begin, uint64_t last) const {
    return meets(uncached_, begin, last + decoder::kMaxInstructionSize);
  }

  decoder::InstructionDecoder decoder_;
  std::unordered_map<uint64_t, BlockEnd> ends_;                   // by block start
  std::unordered_map<uint64_t, decoder::Instruction> transfers_;  // by address (not only transfers)
  AddressRanges uncached_;
};

}  // namespace stub::tracing
