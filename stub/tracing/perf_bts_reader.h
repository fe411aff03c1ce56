#pragma once
// The perf BTS sample ring (PERF_TYPE_HARDWARE branch instructions, sample
// period 1, PERF_SAMPLE_IP | PERF_SAMPLE_ADDR: one 24-byte
// PERF_RECORD_SAMPLE per taken branch, ip = from, addr = to).
//
// The ring is mapped read-only, so the kernel never waits for us: it
// overwrites the oldest samples and only data_head says where it is. We
// therefore read newest first, backwards from data_head, down to where the
// previous read stopped (a delta read), and know that more than one ring's
// worth written since then means the oldest unread samples are gone
// (overflow: a gap). Records are fixed-size, which is what makes reading
// backwards possible; a record that is not a 24-byte SAMPLE or LOST ends the
// walk with a gap, since nothing older can be framed.
#include <linux/perf_event.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "stub/tracing/perf_trace_items.h"

namespace stub::tracing {

inline constexpr std::size_t kBtsSampleSize = 24;

// The mapped ring: its header page and data area (a power of two bytes).
struct PerfRing {
  const perf_event_mmap_page* header = nullptr;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  // Loads data_head (acquire). Tests replace it to move the head while a
  // read is in progress, as a running thread's kernel would.
  std::function<uint64_t()> load_head;
};

uint64_t load_data_head(const perf_event_mmap_page* header);

class PerfBtsReader {
 public:
  // Everything written since the previous read(), oldest first.
  TraceItems read(const PerfRing& ring);
  // Where the next read starts (data_head at the end of the last read).
  uint64_t position() const { return last_head_; }

  struct Stats {
    uint64_t reads = 0;
    uint64_t retries = 0;      // data_head moved while copying
    uint64_t overflows = 0;    // more than a ring's worth since the last read
    uint64_t lost = 0;         // PERF_RECORD_LOST counts
    uint64_t kernel_skipped = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Snapshot {
    uint64_t head = 0;
    bool overflow = false;  // older unread records are gone
    std::vector<uint8_t> bytes;
  };
  Snapshot snapshot(const PerfRing& ring);

  uint64_t last_head_ = 0;
  Stats stats_;
};

}  // namespace stub::tracing
