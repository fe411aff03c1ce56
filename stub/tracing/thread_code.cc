#include "stub/tracing/thread_code.h"

namespace stub::tracing {

std::vector<uint8_t> ThreadCode::fetch_page(uint64_t page) {
  if (control_ == nullptr) return {};
  auto bytes = control_->read_memory(page, kPageSize);
  return bytes ? std::move(*bytes) : std::vector<uint8_t>{};
}

}  // namespace stub::tracing
