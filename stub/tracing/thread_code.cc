#include "stub/tracing/thread_code.h"

#include <algorithm>

namespace stub::tracing {

std::vector<uint8_t> ThreadCode::fetch_page(uint64_t page) {
  if (control_ == nullptr) return {};
  auto bytes = control_->read_memory(page, kPageSize);
  return bytes ? std::move(*bytes) : std::vector<uint8_t>{};
}

std::size_t LiveCode::read(uint64_t addr, uint8_t* out, std::size_t len) {
  process::TracedThreadControl* control = *control_;
  if (control == nullptr) return 0;
  if (refused_ != nullptr) len = static_cast<std::size_t>(first_met(*refused_, addr, addr + len) - addr);
  if (len == 0) return 0;
  auto bytes = control->read_memory(addr, len);
  if (!bytes) return 0;
  const std::size_t n = std::min(len, bytes->size());
  std::copy_n(bytes->begin(), n, out);
  return n;
}

}  // namespace stub::tracing
