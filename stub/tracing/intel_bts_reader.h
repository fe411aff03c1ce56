#pragma once
// The intel_bts PMU's buffers: the AUX area holds the raw 24-byte BTS
// records the CPU writes (from, to, flags) with no copy by the kernel; the
// small data ring tells which AUX bytes are new through PERF_RECORD_AUX
// (aux_offset, aux_size, flags), and reports PERF_RECORD_LOST.
//
// Both areas are mapped writable: we own data_tail and aux_tail, so the
// kernel never overwrites what we have not read. When the AUX area is full
// the driver stops tracing and flags the chunk TRUNCATED; what ran until
// we freed space is lost. Every such loss becomes a gap.
#include <linux/perf_event.h>

#include <cstdint>
#include <functional>

#include "stub/tracing/perf_trace_items.h"

namespace stub::tracing {

inline constexpr std::size_t kBtsRecordBytes = 24;

struct IntelBtsBuffers {
  perf_event_mmap_page* header = nullptr;  // data_tail / aux_tail written back
  const uint8_t* data = nullptr;           // the data ring
  uint64_t data_size = 0;                  // power of two
  const uint8_t* aux = nullptr;            // the AUX area
  uint64_t aux_size = 0;                   // power of two pages
  std::function<uint64_t()> load_head;     // data_head (acquire); tests may replace it
};

class IntelBtsReader {
 public:
  // Everything the kernel announced since the previous read, oldest first;
  // hands the consumed space back to the kernel.
  TraceItems read(IntelBtsBuffers& buffers);

  struct Stats {
    uint64_t chunks = 0;
    uint64_t truncated = 0;     // PERF_AUX_FLAG_TRUNCATED chunks
    uint64_t overwritten = 0;   // PERF_AUX_FLAG_OVERWRITE / PARTIAL / COLLISION chunks
    uint64_t lost = 0;          // PERF_RECORD_LOST counts
    uint64_t skipped_bytes = 0; // AUX bytes never announced (offset jumps)
    uint64_t kernel_skipped = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  void read_chunk(const IntelBtsBuffers& b, uint64_t offset, uint64_t size, uint64_t flags, TraceItems& out);

  uint64_t aux_next_ = 0;  // AUX position the next chunk should start at
  Stats stats_;
};

}  // namespace stub::tracing
