#pragma once
// Code bytes of a stopped program through the tracer's TracedThreadControl
// (breakpoints hidden), a page at a time and kept while it lives: decoding
// a PT trace reads the same few pages for every instruction. Make one per
// decode: the program may have changed its code while it ran.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "decoder/code_reader.h"
#include "stub/process/trace_hook.h"

namespace stub::tracing {

class ThreadCode final : public decoder::CodeReader {
 public:
  // `control` may be null: nothing is readable then.
  explicit ThreadCode(process::TracedThreadControl* control) : control_(control) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override;

 private:
  const std::vector<uint8_t>& page_at(uint64_t page);

  process::TracedThreadControl* control_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;  // empty: unreadable
};

}  // namespace stub::tracing
