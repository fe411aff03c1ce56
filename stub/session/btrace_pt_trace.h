#pragma once
// A thread's branch trace as the Intel PT packets gdb's `record btrace pt`
// reads (decoder/pt_encoder.h), with the code read from the stopped program.
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/block_trace.h"
#include "protocol/expected.h"
#include "stub/process/process.h"

namespace stub::session {

// Where gdb turned tracing on for a thread: the trace's end_sequence() and
// the thread's pc then.
struct PtStart {
  uint64_t sequence = 0;
  uint64_t pc = 0;
};

// The PT stream of `trace` from `start` (tracing begins there, with
// TIP.PGE) to the thread's current `pc`. When branches after `start` were
// dropped since, or there is no start, the stream holds what the trace
// still has and begins in the middle of the execution.
btstub::Expected<std::vector<uint8_t>> pt_packets(process::Process& process, const decoder::BlockTrace& trace,
                                                  const std::optional<PtStart>& start, uint64_t pc);

}  // namespace stub::session
