#include "stub/tracing/thread_code.h"

#include <algorithm>

namespace stub::tracing {
namespace {
constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kPageMask = kPageSize - 1;
}  // namespace

std::size_t ThreadCode::read(uint64_t addr, uint8_t* out, std::size_t len) {
  std::size_t done = 0;
  while (done < len) {
    const uint64_t at = addr + done;
    const std::vector<uint8_t>& page = page_at(at & ~kPageMask);
    const std::size_t offset = static_cast<std::size_t>(at & kPageMask);
    if (offset >= page.size()) break;
    const std::size_t n = std::min(len - done, page.size() - offset);
    std::copy_n(page.data() + offset, n, out + done);
    done += n;
    if (page.size() < kPageSize) break;  // short page: the mapping ends there
  }
  return done;
}

const std::vector<uint8_t>& ThreadCode::page_at(uint64_t page) {
  auto it = pages_.find(page);
  if (it != pages_.end()) return it->second;
  std::vector<uint8_t> bytes;
  if (control_ != nullptr) {
    if (auto read = control_->read_memory(page, kPageSize)) bytes = std::move(*read);
  }
  return pages_.emplace(page, std::move(bytes)).first->second;
}

}  // namespace stub::tracing
