#pragma once
// Code bytes of a stopped program through the tracer's TracedThreadControl
// (breakpoints hidden), a page at a time and kept while it lives
// (decoder::PageCachedReader): decoding a PT trace reads the same few pages
// for every instruction. Make one per decode: the program may have changed
// its code while it ran.
#include <cstdint>
#include <vector>

#include "decoder/code_reader.h"
#include "stub/process/trace_hook.h"

namespace stub::tracing {

class ThreadCode final : public decoder::PageCachedReader {
 public:
  // `control` may be null: nothing is readable then.
  explicit ThreadCode(process::TracedThreadControl* control) : control_(control) {}

 private:
  std::vector<uint8_t> fetch_page(uint64_t page) override;

  process::TracedThreadControl* control_;
};

}  // namespace stub::tracing
