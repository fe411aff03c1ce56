#pragma once
// A thread's branch trace as the Intel PT packets gdb's `record btrace pt`
// reads (decoder/pt_encoder.h), with the code read from the stopped program.
#include <cstdint>
#include <vector>

#include "decoder/block_trace.h"
#include "protocol/expected.h"
#include "stub/process/process.h"

namespace stub::session {

// The PT stream for the whole of `trace`, the thread standing at `pc`.
btstub::Expected<std::vector<uint8_t>> pt_packets(process::Process& process, const decoder::BlockTrace& trace,
                                                  uint64_t pc);

}  // namespace stub::session
