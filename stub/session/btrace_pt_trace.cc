#include "stub/session/btrace_pt_trace.h"

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"
#include "stub/process/process_code.h"

namespace stub::session {

btstub::Expected<std::vector<uint8_t>> pt_packets(process::Process& process, const decoder::BlockTrace& trace,
                                                  const std::optional<PtStart>& start, uint64_t pc) {
  auto insns = decoder::InstructionDecoder::create();
  if (!insns) return insns.error();
  process::ProcessCode code(process);
  decoder::BlockCache cache(*insns, code);
  decoder::PtEncodeOptions options;
  // A trace that was running before gdb turned it on (whole-program
  // recording) is shown from that point, as a BTS trace is through gdb's
  // delta reads and as a fresh perf buffer would be.
  const bool whole = start && start->sequence >= trace.first_sequence() && start->sequence <= trace.end_sequence();
  options.starts_tracing = whole;
  std::vector<decoder::Block> blocks = trace.blocks(whole ? start->sequence : trace.first_sequence(), pc);
  if (whole) blocks.front().begin = start->pc;
  auto stream = decoder::encode_pt(blocks, cache, options);
  if (!stream) return stream.error();
  return std::move(stream->bytes);
}

}  // namespace stub::session
