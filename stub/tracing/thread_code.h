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
#include "stub/tracing/translatable_code.h"

namespace stub::tracing {

class ThreadCode final : public decoder::PageCachedReader {
 public:
  // `control` may be null: nothing is readable then.
  explicit ThreadCode(process::TracedThreadControl* control) : control_(control) {}

 private:
  std::vector<uint8_t> fetch_page(uint64_t page) override;

  process::TracedThreadControl* control_;
};

// The program's code as it is at each read, uncached, through the
// backend's control (`*control`, which the backend may replace or clear):
// what a thread's BlockTrace reads its PT chunks with
// (decoder::BlockTrace::set_code); the trace caches per pack and unpack.
// With `refused` (which its owner may change between reads), reads stop
// short where those ranges begin: what packing reads, keeping code that
// may change out of PT chunks.
class LiveCode final : public decoder::CodeReader {
 public:
  explicit LiveCode(process::TracedThreadControl* const* control, const AddressRanges* refused = nullptr)
      : control_(control), refused_(refused) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override;

 private:
  process::TracedThreadControl* const* control_;
  const AddressRanges* refused_;
};

}  // namespace stub::tracing
