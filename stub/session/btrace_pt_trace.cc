#include "stub/session/btrace_pt_trace.h"

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"
#include "stub/process/process_code.h"

namespace stub::session {

namespace {

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

// The stream is the trace's sealed PT chunks as stored, and the rest (the
// part before the first of them, explicit chunks or chunks whose code
// changed between them, the open branches after them) encoded here. A
// stored segment starts with PSB+ at the address the part before it goes
// on to, so the decoder goes through without a gap.
btstub::Expected<std::vector<uint8_t>> pt_packets(process::Process& process, const decoder::BlockTrace& trace,
                                                  const std::optional<PtStart>& start, uint64_t pc) {
  auto insns = decoder::InstructionDecoder::create();
  if (!insns) return insns.error();
  process::ProcessCode code(process);
  decoder::BlockCache cache(*insns, code);
  // A trace that was running before gdb turned it on (whole-program
  // recording) is shown from that point, as a BTS trace is through gdb's
  // delta reads and as a fresh perf buffer would be.
  const bool whole = start && start->sequence >= trace.first_sequence() && start->sequence <= trace.end_sequence();
  const uint64_t from = whole ? start->sequence : trace.first_sequence();
  std::vector<uint8_t> out;
  uint64_t cursor = from;
  // Encodes branches [cursor, to) and, when `to` is not the end, the
  // transfer into the stored segment that follows.
  auto encode_until = [&](uint64_t to, bool last) -> btstub::Expected<void> {
    decoder::PtEncodeOptions options;
    const bool first = cursor == from;
    options.starts_tracing = whole && first;
    std::vector<decoder::Block> blocks;
    if (last) {
      blocks = trace.blocks(cursor, pc);
    } else {
      uint64_t next_begin = 0;
      blocks = blocks_between(trace, cursor, to, next_begin);
      options.continues_at = next_begin;
    }
    if (whole && first) blocks.front().begin = start->pc;
    auto stream = decoder::encode_pt(blocks, cache, options);
    if (!stream) return stream.error();
    out.insert(out.end(), stream->bytes.begin(), stream->bytes.end());
    return {};
  };
  for (const decoder::BlockTrace::StoredSegment& segment : trace.stored_segments(from)) {
    // gdb's history begins at the pc it turned tracing on at, inside the
    // block a segment starting there would show whole.
    if (whole && segment.first_sequence == from) continue;
    if (segment.first_sequence > cursor) {
      if (auto done = encode_until(segment.first_sequence, false); !done) return done.error();
    }
    out.insert(out.end(), segment.packets.begin(), segment.packets.end());
    cursor = segment.first_sequence + segment.count;
  }
  if (auto done = encode_until(trace.end_sequence(), true); !done) return done.error();
  return out;
}

}  // namespace stub::session
