#pragma once
// The intel_pt PMU's buffers (stub/tracing/aux_ring.h): the AUX area holds
// the Intel PT packet stream the CPU writes. A chunk carries bytes that
// continue the stream, wherever they stop (inside a packet, too); every
// loss the data ring reports (a TRUNCATED or overwritten chunk,
// PERF_RECORD_LOST, AUX bytes never announced) cuts it, and
// decoder::PtStreamDecoder turns the cut into a gap and syncs again at the
// next PSB.
#include <cstdint>
#include <vector>

#include "decoder/pt_decoder.h"
#include "stub/tracing/aux_ring.h"

namespace stub::tracing {

class IntelPtReader {
 public:
  // Everything the kernel announced since the previous read, oldest first;
  // hands the consumed space back to the kernel.
  std::vector<decoder::PtPiece> read(AuxBuffers& buffers);

  struct Stats {
    uint64_t chunks = 0;
    uint64_t bytes = 0;
    uint64_t truncated = 0;      // PERF_AUX_FLAG_TRUNCATED chunks
    uint64_t overwritten = 0;    // PERF_AUX_FLAG_OVERWRITE / PARTIAL / COLLISION chunks
    uint64_t lost = 0;           // PERF_RECORD_LOST counts
    uint64_t skipped_bytes = 0;  // AUX bytes never announced, or no longer there
  };
  const Stats& stats() const { return stats_; }

 private:
  void read_chunk(const AuxBuffers& b, const AuxRecord& chunk, std::vector<decoder::PtPiece>& out);

  uint64_t aux_next_ = 0;  // AUX position the next chunk should start at
  Stats stats_;
};

}  // namespace stub::tracing
