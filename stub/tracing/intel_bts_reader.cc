#include "stub/tracing/intel_bts_reader.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace stub::tracing {

namespace {

// Copies `len` bytes at ring position `pos`, continuing at the ring's start
// past its end.
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

struct AuxBody {
  uint64_t offset;
  uint64_t size;
  uint64_t flags;
};

struct BtsRecord {
  uint64_t from;
  uint64_t to;
  uint64_t flags;
};
static_assert(sizeof(BtsRecord) == kBtsRecordBytes);

}  // namespace

void IntelBtsReader::read_chunk(const IntelBtsBuffers& b, uint64_t offset, uint64_t size, uint64_t flags,
                                TraceItems& out) {
  ++stats_.chunks;
  constexpr uint64_t kOverwritten = PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL | PERF_AUX_FLAG_COLLISION;
  if (offset != aux_next_) {
    // Data between the last chunk and this one was never announced.
    stats_.skipped_bytes += offset > aux_next_ ? offset - aux_next_ : 0;
    push_gap(out);
  }
  if ((flags & kOverwritten) != 0) {
    ++stats_.overwritten;
    push_gap(out);  // older data was overwritten before this chunk
  }
  if (size > b.aux_size) {
    // Cannot all be there any more: keep the newest whole records.
    push_gap(out);
    uint64_t drop = size - b.aux_size;
    drop += (kBtsRecordBytes - drop % kBtsRecordBytes) % kBtsRecordBytes;
    offset += drop;
    size -= drop;
  }
  uint64_t whole = size - size % kBtsRecordBytes;
  for (uint64_t at = 0; at < whole; at += kBtsRecordBytes) {
    BtsRecord r;
    copy_wrapped(b.aux, b.aux_size, offset + at, &r, sizeof r);
    if (r.from == 0 && r.to == 0) continue;  // padding the driver writes
    if (is_kernel_address(r.from) || is_kernel_address(r.to)) {
      ++stats_.kernel_skipped;
      continue;
    }
    out.push_back(branch_item(r.from, r.to));
  }
  if (whole != size) {
    // The driver pads the end of its buffer with zeros; anything else is a
    // torn record, not ours to guess.
    uint8_t rest[kBtsRecordBytes] = {};
    copy_wrapped(b.aux, b.aux_size, offset + whole, rest, static_cast<std::size_t>(size - whole));
    if (std::any_of(rest, rest + (size - whole), [](uint8_t byte) { return byte != 0; })) push_gap(out);
  }
  aux_next_ = offset + size;
  if ((flags & PERF_AUX_FLAG_TRUNCATED) != 0) {
    ++stats_.truncated;
    push_gap(out);  // tracing stopped here until we made room
  }
}

TraceItems IntelBtsReader::read(IntelBtsBuffers& b) {
  TraceItems out;
  if (b.header == nullptr || b.data == nullptr || b.data_size == 0 || b.aux == nullptr || b.aux_size == 0) return out;
  uint64_t head = b.load_head ? b.load_head() : __atomic_load_n(&b.header->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = b.header->data_tail;
  if (head - tail > b.data_size) {
    // Cannot happen with a writable ring unless the header is corrupt.
    push_gap(out);
    tail = head;
  }
  while (head - tail >= sizeof(perf_event_header)) {
    perf_event_header h;
    copy_wrapped(b.data, b.data_size, tail, &h, sizeof h);
    if (h.size < sizeof h || h.size > head - tail) {
      push_gap(out);  // unframeable: drop the rest
      break;
    }
    if (h.type == PERF_RECORD_AUX && h.size >= sizeof h + sizeof(AuxBody)) {
      AuxBody body;
      copy_wrapped(b.data, b.data_size, tail + sizeof h, &body, sizeof body);
      read_chunk(b, body.offset, body.size, body.flags, out);
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
      uint64_t lost[2];
      copy_wrapped(b.data, b.data_size, tail + sizeof h, lost, sizeof lost);
      stats_.lost += lost[1];
      push_gap(out);
    }
    tail += h.size;  // other records (ITRACE_START, ...) carry no branches
  }
  __atomic_store_n(&b.header->aux_tail, aux_next_, __ATOMIC_RELEASE);
  __atomic_store_n(&b.header->data_tail, head, __ATOMIC_RELEASE);
  return out;
}

}  // namespace stub::tracing
