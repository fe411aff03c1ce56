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

}  // namespace

std::optional<PackedPtSegment> pack_pt_segment(InstructionDecoder& insns, CodeReader& code, uint64_t previous_to,
                                               const std::vector<Branch>& branches) {
  if (branches.empty()) return std::nullopt;
  PageView view(code);
  BlockCache blocks(insns, view);
  auto segment = encode_pt_segment(previous_to, branches, blocks);
  if (!segment || !segment->has_value()) return std::nullopt;
  std::vector<uint8_t>& bytes = (*segment)->bytes;
  auto decoded = decode_pt_segment(bytes.data(), bytes.size(), previous_to, branches.back().to, view);
  if (!decoded || decoded->branches != branches) return std::nullopt;
  bytes.shrink_to_fit();
  return PackedPtSegment{std::move(bytes), decoded->code_hash};
}

std::optional<PackedPtSegment> PtChunkCodec::pack(uint64_t previous_to, const std::vector<Branch>& branches) {
  if (!code_ || branches.empty()) return std::nullopt;
  if (!insns_) {
    auto created = InstructionDecoder::create();
    if (!created) return std::nullopt;
    insns_.emplace(std::move(*created));
  }
  return pack_pt_segment(*insns_, *code_, previous_to, branches);
}

std::optional<PackedPtSegment> PtChunkCodec::adopt(uint64_t previous_to, std::span<const uint8_t> packets,
                                                   const std::vector<Branch>& branches) {
  if (!code_ || branches.empty() || packets.empty()) return std::nullopt;
  PageView view(*code_);
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
