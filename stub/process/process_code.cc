#include "stub/process/process_code.h"

namespace stub::process {

std::vector<uint8_t> ProcessCode::fetch_page(uint64_t page) {
  auto bytes = process_.read_memory(page, kPageSize);
  return bytes ? std::move(*bytes) : std::vector<uint8_t>{};
}

}  // namespace stub::process
