#include "stub/tracing/intel_bts_reader.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace stub::tracing {

namespace {

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
  if (offset != aux_next_) {
    // Data between the last chunk and this one was never announced.
    stats_.skipped_bytes += offset > aux_next_ ? offset - aux_next_ : 0;
    push_gap(out);
  }
  if ((flags & kAuxOverwritten) != 0) {
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
  for (const AuxRecord& r : take_aux_records(b)) {
    switch (r.kind) {
      case AuxRecord::Kind::Chunk: read_chunk(b, r.offset, r.size, r.flags, out); break;
      case AuxRecord::Kind::Lost:
        stats_.lost += r.size;
        push_gap(out);
        break;
      case AuxRecord::Kind::Unreadable: push_gap(out); break;
    }
  }
  if (aux_buffers_valid(b)) __atomic_store_n(&b.header->aux_tail, aux_next_, __ATOMIC_RELEASE);
  return out;
}

}  // namespace stub::tracing
