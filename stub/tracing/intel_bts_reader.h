#pragma once
// The intel_bts PMU's buffers (stub/tracing/aux_ring.h): the AUX area holds
// the raw 24-byte BTS records the CPU writes (from, to, flags). Every loss
// the data ring reports (a TRUNCATED or overwritten chunk, PERF_RECORD_LOST,
// AUX bytes never announced) becomes a gap.
#include <cstdint>

#include "stub/tracing/aux_ring.h"
#include "stub/tracing/perf_trace_items.h"

namespace stub::tracing {

inline constexpr std::size_t kBtsRecordBytes = 24;

using IntelBtsBuffers = AuxBuffers;

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
