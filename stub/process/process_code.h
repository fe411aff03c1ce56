#pragma once
// Code bytes of a stopped program for the decoder (breakpoints hidden, as
// Process::read_memory gives them), a page at a time and kept
// (decoder::PageCachedReader). clear() when the program ran.
#include <cstdint>
#include <vector>

#include "decoder/code_reader.h"
#include "stub/process/process.h"

namespace stub::process {

class ProcessCode final : public decoder::PageCachedReader {
 public:
  explicit ProcessCode(Process& process) : process_(process) {}

 private:
  std::vector<uint8_t> fetch_page(uint64_t page) override;

  Process& process_;
};

}  // namespace stub::process
