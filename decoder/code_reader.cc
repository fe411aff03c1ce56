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

std::size_t PageCachedReader::read(uint64_t addr, uint8_t* out, std::size_t len) {
  constexpr uint64_t kPageMask = kPageSize - 1;
  std::size_t done = 0;
  while (done < len) {
    const uint64_t at = addr + done;
    const std::vector<uint8_t>& page = page_at(at & ~kPageMask);
    const std::size_t offset = static_cast<std::size_t>(at & kPageMask);
    if (offset >= page.size()) break;
    const std::size_t n = std::min(len - done, page.size() - offset);
    std::copy_n(page.data() + offset, n, out + done);
    done += n;
    if (page.size() < kPageSize) break;  // a short page: the mapping ends there
  }
  return done;
}

const std::vector<uint8_t>& PageCachedReader::page_at(uint64_t page) {
  if (last_ != nullptr && last_page_ == page) return *last_;
  auto it = pages_.find(page);
  if (it == pages_.end()) it = pages_.emplace(page, fetch_page(page)).first;
  last_page_ = page;
  last_ = &it->second;
  return *last_;
}

}  // namespace decoder
