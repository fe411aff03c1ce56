#pragma once
// A branch trace written in Intel PT's packet format, for gdb's
// `record btrace pt`: the blocks of a BlockTrace (which the software tracer
// and the BTS backends fill) become the packets real PT hardware would have
// written for that execution with user-only tracing. libipt's encoder writes
// the packets; Capstone (through BlockCache) says which instructions each
// block runs through:
//   - a conditional branch (jcc, loop, jrcxz): one TNT bit, 0 inside a
//     block, 1 for the taken one ending it;
//   - a direct jmp/call: nothing (the decoder knows the target);
//   - an indirect jmp/call and ret: a TIP with the target (IP compressed
//     against the last IP; in the stream of encode_pt returns are never
//     compressed into TNT bits, in a segment they are, see below);
//   - a syscall (or int n) the thread continues after: TIP.PGD (IP
//     suppressed: the kernel is not traced) and TIP.PGE at the next
//     instruction, which the decoder sees as tracing resumed where it
//     stopped; a syscall that continues elsewhere (rt_sigreturn, execve):
//     a TIP there, as a far branch whose kernel part is left out (PGD +
//     PGE elsewhere would be a gap to gdb);
//   - a transfer the instruction does not make (a signal's delivery, where
//     the interrupted instruction has not run; a fault such as ud2): FUP
//     at the instruction, TIP to the handler (an asynchronous branch);
//   - a block that cannot be walked (unreadable or changed code, a hardware
//     trace's gap): tracing off (FUP + TIP.PGD) at the branch into it (which
//     is lost with it), on again (TIP.PGE) after it: gdb shows a gap;
//   - PSB+ (PSB, MODE.Exec 64-bit, FUP when tracing is on, PSBEND) first
//     and again after every `psb_period` bytes, at a block boundary;
//     TIP.PGE where tracing started; FUP + TIP.PGD at the current pc (the
//     thread stopped there: the instruction under the pc has not run).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/block_trace.h"
#include "protocol/expected.h"

namespace decoder {

struct PtEncodeOptions {
  // The oldest block begins where tracing was enabled (nothing was dropped):
  // the stream enables tracing there with TIP.PGE. Otherwise it begins in
  // the middle of a traced execution, as a PT buffer that wrapped does.
  bool starts_tracing = true;
  // Bytes between two PSB+ (real hardware's smallest period is 2 KiB; its
  // default is 4 KiB). A decoder can start at any PSB.
  std::size_t psb_period = 4096;
  // The last block is not where the thread stopped: execution went on to
  // here, where a stored segment (encode_pt_segment) takes over. The
  // stream then ends with the last block's transfer, not FUP + TIP.PGD.
  std::optional<uint64_t> continues_at = std::nullopt;
};

struct PtStream {
  std::vector<uint8_t> bytes;
  std::size_t gaps = 0;  // blocks that could not be walked
};

// The PT stream for `oldest_first` (the last block ends at the thread's
// current pc; a first block beginning at 0, an unknown start, is left out).
// Errors only when libipt refuses a packet (a bug) or runs out of memory.
btstub::Expected<PtStream> encode_pt(const std::vector<Block>& oldest_first, BlockCache& code,
                                     const PtEncodeOptions& options = {});

// One segment of a store (decoder/pt_chunk.h): the packets of `branches`
// alone, with the rules above, decodable from its own start. It begins
// with PSB+ (PSB, MODE.Exec, FUP at `begin`, where the first block begins,
// PSBEND) and ends with the packets of the last branch; no TIP.PGE, no
// current pc. Returns use PT's return compression: a ret to the return
// address of a call earlier in the segment is one taken TNT bit (libipt's
// decoder keeps the same return stack). nullopt when a block cannot be
// walked (no segment can say it).
struct PtSegment {
  std::vector<uint8_t> bytes;
};
btstub::Expected<std::optional<PtSegment>> encode_pt_segment(uint64_t begin, const std::vector<Branch>& branches,
                                                             BlockCache& code);

}  // namespace decoder
