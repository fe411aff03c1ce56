#pragma once
// Code bytes of a stopped program for the decoder (breakpoints hidden, as
// Process::read_memory gives them), read a page at a time and kept: a
// history's decoding reads the same few pages over and over, and each
// process read is a system call. clear() when the program ran.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "decoder/code_reader.h"
#include "stub/process/process.h"

namespace stub::process {

class ProcessCode final : public decoder::CodeReader {
 public:
  explicit ProcessCode(Process& process) : process_(process) {}

  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override;
  void clear() { pages_.clear(); }

 private:
  const std::vector<uint8_t>& page_at(uint64_t page);

  Process& process_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;  // short or empty: the mapping ends there
};

}  // namespace stub::process
