#pragma once
// A BlockTrace chunk's branches as one Intel PT segment (decoder/pt_encoder.h
// encode_pt_segment: PSB+ with FUP where its first block begins, then TNT
// bits, TIPs with return compression, FUP/TIP and TIP.PGD/PGE), which
// libipt's decoder turns back into the branches by walking the code.
//
// "Unknown is unavailable, never a guess":
//   - Packing decodes the new segment at once and keeps it only if it gives
//     back exactly the branches; otherwise (a gap branch from hardware,
//     unreadable code, an asynchronous event PT cannot place, a path that
//     revisits the end target without a packet) the caller keeps the
//     chunk in the explicit format (decoder/branch_chunk.h).
//   - The code under a segment can change after it was packed (dlclose and
//     dlopen at the same address, a JIT). A packed segment keeps the hash of
//     the bytes of every instruction its walk went through; unpacking walks
//     again and refuses (nullopt) when the hash differs or the walk fails,
//     and the caller shows those branches as a gap.
//
// Each pack or unpack reads the code through its own page cache over the
// reader given here, so it sees the code as it is now.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "decoder/branch.h"
#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"

namespace decoder {

struct PackedPtSegment {
  std::vector<uint8_t> bytes;
  uint64_t code_hash = 0;
};

// The segment of `branches` (the first block begins at `previous_to`)
// over `code`, or nullopt when it would not give them back exactly.
std::optional<PackedPtSegment> pack_pt_segment(InstructionDecoder& insns, CodeReader& code, uint64_t previous_to,
                                               const std::vector<Branch>& branches);

// Packs segment after segment (a trace's chunks, a packer thread's jobs),
// keeping the blocks it decoded from one to the next: a loop's blocks are
// decoded once, not once a chunk (BlockCache::use_reader; a block is used
// again only over the same bytes). Not movable: the cache holds its decoder.
class SegmentPacker {
 public:
  explicit SegmentPacker(InstructionDecoder insns);
  SegmentPacker(const SegmentPacker&) = delete;
  SegmentPacker& operator=(const SegmentPacker&) = delete;
  ~SegmentPacker();

  // As pack_pt_segment over `code`.
  std::optional<PackedPtSegment> pack(CodeReader& code, uint64_t previous_to, const std::vector<Branch>& branches);

 private:
  InstructionDecoder insns_;
  std::unique_ptr<class BlockCache> blocks_;
};

class PtChunkCodec {
 public:
  // Packing reads through `pack_code` (else `code`): code that may change
  // later can be kept out of segments there, whose branches then stay in
  // the explicit format instead of reading as a gap once it changed.
  explicit PtChunkCodec(std::shared_ptr<CodeReader> code, std::shared_ptr<CodeReader> pack_code = nullptr)
      : code_(std::move(code)), pack_code_(pack_code ? std::move(pack_code) : code_) {}

  // The segment of `branches` (the first block begins at `previous_to`),
  // or nullopt when it would not give them back exactly.
  std::optional<PackedPtSegment> pack(uint64_t previous_to, const std::vector<Branch>& branches);
  // `packets` kept as they are when they decode to exactly `branches` (the
  // first block begins at `previous_to`): a CPU's segment; else nullopt.
  std::optional<PackedPtSegment> adopt(uint64_t previous_to, std::span<const uint8_t> packets,
                                       const std::vector<Branch>& branches);
  // The `count` branches of a segment packed from `previous_to` whose last
  // branch went to `end_to`; nullopt when the code changed or the walk fails.
  std::optional<std::vector<Branch>> unpack(const uint8_t* bytes, std::size_t size, uint64_t code_hash,
                                            uint64_t previous_to, uint64_t end_to, std::size_t count);
  // The reader packing goes through (for a snapshot of the code to pack elsewhere).
  CodeReader& code() { return *pack_code_; }

 private:
  std::shared_ptr<CodeReader> code_;
  std::shared_ptr<CodeReader> pack_code_;
  std::unique_ptr<SegmentPacker> packer_;  // made at the first pack
};

}  // namespace decoder
