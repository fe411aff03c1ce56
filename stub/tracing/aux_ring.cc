#include "stub/tracing/aux_ring.h"

#include <algorithm>
#include <cstring>

namespace stub::tracing {

namespace {

struct AuxBody {
  uint64_t offset;
  uint64_t size;
  uint64_t flags;
};

}  // namespace

void copy_wrapped(const uint8_t* ring, uint64_t ring_size, uint64_t pos, void* dst, std::size_t len) {
  auto* out = static_cast<uint8_t*>(dst);
  std::size_t done = 0;
  while (done < len) {
    uint64_t offset = (pos + done) % ring_size;
    std::size_t chunk = static_cast<std::size_t>(std::min<uint64_t>(ring_size - offset, len - done));
    std::memcpy(out + done, ring + offset, chunk);
    done += chunk;
  }
}

bool aux_buffers_valid(const AuxBuffers& b) {
  return b.header != nullptr && b.data != nullptr && b.data_size != 0 && b.aux != nullptr && b.aux_size != 0;
}

std::vector<AuxRecord> take_aux_records(AuxBuffers& b) {
  std::vector<AuxRecord> out;
  if (!aux_buffers_valid(b)) return out;
  uint64_t head = b.load_head ? b.load_head() : __atomic_load_n(&b.header->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = b.header->data_tail;
  if (head - tail > b.data_size) {
    // Cannot happen with a writable ring unless the header is corrupt.
    out.push_back({AuxRecord::Kind::Unreadable, 0, 0, 0});
    tail = head;
  }
  while (head - tail >= sizeof(perf_event_header)) {
    perf_event_header h;
    copy_wrapped(b.data, b.data_size, tail, &h, sizeof h);
    if (h.size < sizeof h || h.size > head - tail) {
      out.push_back({AuxRecord::Kind::Unreadable, 0, 0, 0});  // unframeable: drop the rest
      break;
    }
    if (h.type == PERF_RECORD_AUX && h.size >= sizeof h + sizeof(AuxBody)) {
      AuxBody body;
      copy_wrapped(b.data, b.data_size, tail + sizeof h, &body, sizeof body);
      out.push_back({AuxRecord::Kind::Chunk, body.offset, body.size, body.flags});
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
      uint64_t lost[2];
      copy_wrapped(b.data, b.data_size, tail + sizeof h, lost, sizeof lost);
      out.push_back({AuxRecord::Kind::Lost, 0, lost[1], 0});
    }
    tail += h.size;  // other records (ITRACE_START, ...) carry no trace
  }
  __atomic_store_n(&b.header->data_tail, head, __ATOMIC_RELEASE);
  return out;
}

}  // namespace stub::tracing
