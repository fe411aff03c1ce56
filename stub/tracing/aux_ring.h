#pragma once
// The two buffers of a perf AUX-area event (intel_bts, intel_pt): the AUX
// area the CPU writes its trace into, with no copy by the kernel, and the
// small data ring that tells which AUX bytes are new through
// PERF_RECORD_AUX (aux_offset, aux_size, flags) and reports
// PERF_RECORD_LOST.
//
// Both are mapped writable: we own data_tail and aux_tail, so the kernel
// never overwrites what we have not read. When the AUX area is full the
// driver stops tracing and flags the chunk TRUNCATED; what ran until we
// freed space is lost.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace stub::tracing {

struct AuxBuffers {
  perf_event_mmap_page* header = nullptr;  // data_tail / aux_tail written back
  const uint8_t* data = nullptr;           // the data ring
  uint64_t data_size = 0;                  // power of two
  const uint8_t* aux = nullptr;            // the AUX area
  uint64_t aux_size = 0;                   // power of two pages
  std::function<uint64_t()> load_head;     // data_head (acquire); tests may replace it
};

// What the data ring said since the last call.
struct AuxRecord {
  enum class Kind {
    Chunk,        // PERF_RECORD_AUX: [offset, offset + size) of the AUX area, with flags
    Lost,         // PERF_RECORD_LOST: `size` records lost
    Unreadable,   // the ring cannot be framed past here (corrupt header): the rest is dropped
  };
  Kind kind = Kind::Chunk;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t flags = 0;
};

// The flags of a chunk whose older data was overwritten or is partial.
inline constexpr uint64_t kAuxOverwritten = PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL | PERF_AUX_FLAG_COLLISION;

bool aux_buffers_valid(const AuxBuffers& b);
// Reads the data ring from data_tail to data_head and hands that space back
// (data_tail); the caller hands back AUX space (aux_tail) once it has read it.
std::vector<AuxRecord> take_aux_records(AuxBuffers& b);
// Copies `len` bytes at ring position `pos`, continuing at the ring's start
// past its end.
void copy_wrapped(const uint8_t* ring, uint64_t ring_size, uint64_t pos, void* dst, std::size_t len);

}  // namespace stub::tracing
