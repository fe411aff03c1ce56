#include "stub/tracing/intel_pt_reader.h"

namespace stub::tracing {

namespace {

void push_loss(std::vector<decoder::PtPiece>& out) {
  if (out.empty() || !out.back().lost) out.push_back({true, {}});
}

}  // namespace

void IntelPtReader::read_chunk(const AuxBuffers& b, const AuxRecord& chunk, std::vector<decoder::PtPiece>& out) {
  ++stats_.chunks;
  uint64_t offset = chunk.offset;
  uint64_t size = chunk.size;
  if (offset != aux_next_) {
    // Data between the last chunk and this one was never announced.
    stats_.skipped_bytes += offset > aux_next_ ? offset - aux_next_ : 0;
    push_loss(out);
  }
  if ((chunk.flags & kAuxOverwritten) != 0) {
    ++stats_.overwritten;
    push_loss(out);  // older data was overwritten before this chunk
  }
  if (size > b.aux_size) {
    // Cannot all be there any more: keep the newest bytes (the decoder
    // starts at their first PSB).
    push_loss(out);
    stats_.skipped_bytes += size - b.aux_size;
    offset += size - b.aux_size;
    size = b.aux_size;
  }
  if (size > 0) {
    decoder::PtPiece piece;
    piece.bytes.resize(static_cast<std::size_t>(size));
    copy_wrapped(b.aux, b.aux_size, offset, piece.bytes.data(), piece.bytes.size());
    stats_.bytes += size;
    out.push_back(std::move(piece));
  }
  aux_next_ = offset + size;
  if ((chunk.flags & PERF_AUX_FLAG_TRUNCATED) != 0) {
    ++stats_.truncated;
    push_loss(out);  // tracing stopped here until we made room
  }
}

std::vector<decoder::PtPiece> IntelPtReader::read(AuxBuffers& b) {
  std::vector<decoder::PtPiece> out;
  for (const AuxRecord& r : take_aux_records(b)) {
    switch (r.kind) {
      case AuxRecord::Kind::Chunk: read_chunk(b, r, out); break;
      case AuxRecord::Kind::Lost:
        stats_.lost += r.size;
        push_loss(out);
        break;
      case AuxRecord::Kind::Unreadable: push_loss(out); break;
    }
  }
  if (aux_buffers_valid(b)) __atomic_store_n(&b.header->aux_tail, aux_next_, __ATOMIC_RELEASE);
  return out;
}

}  // namespace stub::tracing
