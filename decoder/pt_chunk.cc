#include "decoder/pt_chunk.h"

#include "decoder/block_cache.h"
#include "decoder/pt_decoder.h"
#include "decoder/pt_encoder.h"

namespace decoder {
namespace {

// One operation's view of the code: pages fetched once from the reader.
class PageView final : public PageCachedReader {
 public:
  explicit PageView(CodeReader& code) : code_(code) {}

 private:
  std::vector<uint8_t> fetch_page(uint64_t page) override {
    std::vector<uint8_t> bytes(kPageSize);
    bytes.resize(code_.read(page, bytes.data(), bytes.size()));
    return bytes;
  }
  CodeReader& code_;
};

// Nothing to read: a BlockCache's reader until use_reader() names one.
class NoCode final : public CodeReader {
 public:
  std::size_t read(uint64_t, uint8_t*, std::size_t) override { return 0; }
};
NoCode no_code;

std::optional<PackedPtSegment> pack_over(BlockCache& blocks, PageView& view, uint64_t previous_to,
                                         const std::vector<Branch>& branches) {
  auto segment = encode_pt_segment(previous_to, branches, blocks);
  if (!segment || !segment->has_value()) return std::nullopt;
  std::vector<uint8_t>& bytes = (*segment)->bytes;
  auto decoded = decode_pt_segment(bytes.data(), bytes.size(), previous_to, branches.back().to, view);
  if (!decoded || decoded->branches != branches) return std::nullopt;
  bytes.shrink_to_fit();
  return PackedPtSegment{std::move(bytes), decoded->code_hash};
}

}  // namespace

std::optional<PackedPtSegment> pack_pt_segment(InstructionDecoder& insns, CodeReader& code, uint64_t previous_to,
                                               const std::vector<Branch>& branches) {
  if (branches.empty()) return std::nullopt;
  PageView view(code);
  BlockCache blocks(insns, view);
  return pack_over(blocks, view, previous_to, branches);
}

SegmentPacker::SegmentPacker(InstructionDecoder insns)
    : insns_(std::move(insns)), blocks_(std::make_unique<BlockCache>(insns_, no_code)) {}

SegmentPacker::~SegmentPacker() = default;

std::optional<PackedPtSegment> SegmentPacker::pack(CodeReader& code, uint64_t previous_to,
                                                   const std::vector<Branch>& branches) {
  if (branches.empty()) return std::nullopt;
  PageView view(code);
  blocks_->use_reader(view);
  auto packed = pack_over(*blocks_, view, previous_to, branches);
  blocks_->use_reader(no_code);  // the view goes now
  return packed;
}

std::optional<PackedPtSegment> PtChunkCodec::pack(uint64_t previous_to, const std::vector<Branch>& branches) {
  if (!code_ || branches.empty()) return std::nullopt;
  if (!packer_) {
    auto created = InstructionDecoder::create();
    if (!created) return std::nullopt;
    packer_ = std::make_unique<SegmentPacker>(std::move(*created));
  }
  return packer_->pack(*pack_code_, previous_to, branches);
}

std::optional<PackedPtSegment> PtChunkCodec::adopt(uint64_t previous_to, std::span<const uint8_t> packets,
                                                   const std::vector<Branch>& branches) {
  if (!code_ || branches.empty() || packets.empty()) return std::nullopt;
  PageView view(*pack_code_);
  auto decoded = decode_pt_segment(packets.data(), packets.size(), previous_to, branches.back().to, view);
  if (!decoded || decoded->branches != branches) return std::nullopt;
  return PackedPtSegment{std::vector<uint8_t>(packets.begin(), packets.end()), decoded->code_hash};
}

std::optional<std::vector<Branch>> PtChunkCodec::unpack(const uint8_t* bytes, std::size_t size, uint64_t code_hash,
                                                        uint64_t previous_to, uint64_t end_to, std::size_t count) {
  if (!code_) return std::nullopt;
  PageView view(*code_);
  auto decoded = decode_pt_segment(bytes, size, previous_to, end_to, view);
  if (!decoded || decoded->code_hash != code_hash || decoded->branches.size() != count) return std::nullopt;
  return std::move(decoded->branches);
}

}  // namespace decoder
