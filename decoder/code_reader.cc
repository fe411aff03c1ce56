#include "decoder/code_reader.h"

#include <algorithm>
#include <cstring>

namespace decoder {

std::size_t BufferReader::read(uint64_t addr, uint8_t* out, std::size_t len) {
  if (addr < base_ || addr - base_ >= size_) return 0;
  const std::size_t offset = static_cast<std::size_t>(addr - base_);
  const std::size_t n = std::min(len, size_ - offset);
  std::memcpy(out, data_ + offset, n);
  return n;
}

}  // namespace decoder
