#include "stub/process/shared_memory_digest.h"

#include <algorithm>
#include <cstring>

#include "stub/process/page_size.h"

namespace stub::process {
namespace {

// Read at most this much at once (the live program's shared memory is
// bounded by what a checkpoint copies, 8 MiB).
constexpr uint64_t kReadChunk = uint64_t{1} << 20;
// Marks a page that cannot be read.
constexpr uint64_t kHole = 0x686f6c65'2d706167ull;

uint64_t mix(uint64_t h, uint64_t value) {
  h ^= value;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

}  // namespace

void SharedDigest::range(uint64_t begin, uint64_t end) { h_ = mix(mix(h_, begin), end); }

void SharedDigest::bytes(std::span<const uint8_t> bytes) {
  std::size_t i = 0;
  // Word by word where whole (reads end at page bounds), by byte after.
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, 8);
    h_ = mix(h_, word);
  }
  for (; i < bytes.size(); ++i) h_ = mix(h_, bytes[i] | 0x100);
}

void SharedDigest::hole(uint64_t page) { h_ = mix(mix(h_, kHole), page); }

uint64_t shared_memory_digest(const SharedRanges& ranges, const MemoryRead& read) {
  SharedDigest digest;
  for (const auto& [begin, end] : ranges) {
    digest.range(begin, end);
    for (uint64_t at = begin; at < end;) {
      const uint64_t len = std::min(kReadChunk, end - at);
      auto bytes = read(at, len);
      if (!bytes || bytes->empty()) {
        // Skip to the next page: what a copy unmapped and what the program
        // cannot read are both holes there.
        digest.hole(at);
        at = (at & ~(kPageSize - 1)) + kPageSize;
        continue;
      }
      const std::size_t got = std::min<std::size_t>(bytes->size(), len);
      digest.bytes(std::span(*bytes).first(got));
      at += got;
    }
  }
  return digest.value();
}

}  // namespace stub::process
