#include "stub/session/btrace_pt_trace.h"

#include <algorithm>

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"
#include "protocol/btrace_xml.h"
#include "stub/process/process_code.h"

namespace stub::session {

namespace {

btstub::Error document_error(std::string text) {
  return btstub::make_error(btstub::ErrorCode::InvalidArgument, std::move(text));
}

// The blocks of branches [from, to): each ends at its branch; the block
// after the last begins at the returned address (where execution went on).
std::vector<decoder::Block> blocks_between(const decoder::BlockTrace& trace, uint64_t from, uint64_t to,
                                           uint64_t& next_begin) {
  std::vector<decoder::Block> out;
  out.reserve(static_cast<std::size_t>(to - from));
  uint64_t begin = from == trace.first_sequence() ? trace.oldest_begin() : trace.at(from - 1).to;
  for (uint64_t seq = from; seq < to; ++seq) {
    const decoder::Branch b = trace.at(seq);
    out.push_back(decoder::Block{begin, b.from});
    begin = b.to;
  }
  next_begin = begin;
  return out;
}

}  // namespace

PtDocument::PtDocument(const decoder::BlockTrace& trace, const std::optional<PtStart>& start, uint64_t pc)
    : trace_id_(trace.id()),
      end_sequence_(trace.end_sequence()),
      pc_(pc),
      // A trace that was running before gdb turned it on (whole-program
      // recording) is shown from that point, as a BTS trace is through
      // gdb's delta reads and as a fresh perf buffer would be.
      starts_tracing_(start && start->sequence >= trace.first_sequence() && start->sequence <= trace.end_sequence()),
      start_pc_(starts_tracing_ ? start->pc : 0),
      from_(starts_tracing_ ? start->sequence : trace.first_sequence()),
      cursor_(from_),
      window_(protocol::btrace_pt_xml_head()) {}

btstub::Expected<std::vector<uint8_t>> PtDocument::next_piece(process::Process& process,
                                                              const decoder::BlockTrace& trace) {
  const bool first = cursor_ == from_;
  // gdb's history begins at the pc it turned tracing on at, inside the
  // block a segment starting there would show whole: that one is encoded.
  if (!(starts_tracing_ && first)) {
    // (A segment sealed since the document began may reach past its end.)
    if (auto segment = trace.stored_segment_at(cursor_); segment && cursor_ + segment->count <= end_sequence_) {
      cursor_ += segment->count;
      return std::vector<uint8_t>(segment->packets.begin(), segment->packets.end());
    }
  }
  if (!insns_) {
    auto insns = decoder::InstructionDecoder::create();
    if (!insns) return insns.error();
    insns_ = std::make_unique<decoder::InstructionDecoder>(std::move(*insns));
  }
  process::ProcessCode code(process);
  decoder::BlockCache cache(*insns_, code);
  decoder::PtEncodeOptions options;
  options.starts_tracing = starts_tracing_ && first;
  const uint64_t to = std::min(trace.next_chunk_start(cursor_), cursor_ + kPieceBranches);
  std::vector<decoder::Block> blocks;
  if (to >= end_sequence_) {
    uint64_t last_begin = 0;
    blocks = blocks_between(trace, cursor_, end_sequence_, last_begin);
    blocks.push_back(decoder::Block{last_begin, pc_});
    last_written_ = true;
    cursor_ = end_sequence_;
  } else {
    uint64_t next_begin = 0;
    blocks = blocks_between(trace, cursor_, to, next_begin);
    options.continues_at = next_begin;
    cursor_ = to;
  }
  if (options.starts_tracing) blocks.front().begin = start_pc_;
  auto stream = decoder::encode_pt(blocks, cache, options);
  if (!stream) return stream.error();
  return std::move(stream->bytes);
}

btstub::Expected<void> PtDocument::write_next(process::Process& process, const decoder::BlockTrace& trace) {
  if (!last_written_) {
    auto packets = next_piece(process, trace);
    if (!packets) return packets.error();
    if (!packets->empty()) {
      if (!raw_open_) window_.text() += protocol::btrace_pt_raw_open();
      raw_open_ = true;
      protocol::append_pt_hex(window_.text(), packets->data(), packets->size());
    }
    return {};
  }
  // No packets at all: no <raw> element, as gdbserver sends an empty trace.
  if (raw_open_) window_.text() += protocol::btrace_pt_raw_close();
  window_.text() += protocol::btrace_pt_xml_tail();
  window_.finish();
  return {};
}

btstub::Expected<std::string_view> PtDocument::read(process::Process& process, const decoder::BlockTrace& trace,
                                                    uint64_t offset, std::size_t length) {
  // Branches are never renumbered: what the trace appended since is after
  // end_sequence_, and those still to be written are there while none of
  // them was dropped.
  const bool rest_kept = last_written_ || trace.first_sequence() <= cursor_;
  if (trace.id() != trace_id_ || trace.end_sequence() < end_sequence_ || !rest_kept) {
    return document_error("The branches of this document were dropped since it was begun; read it again from offset 0.");
  }
  return window_.read(offset, length, [&] { return write_next(process, trace); });
}

}  // namespace stub::session
