#pragma once
// Intel PT packets (what an intel_pt PMU writes into its AUX area) back into
// the taken branches a BlockTrace stores, for the hardware PT backend.
//
// Why libipt's instruction-flow decoder (pt_insn_*) and not its query
// decoder plus our own Capstone walk: the packet semantics that make PT
// hard (TNT bits against conditional branches, IP compression, FUP binding
// to the instruction an event happened at, return compression, PSB+ status
// updates, OVF recovery) all live in libipt's walk, which is also what gdb
// decodes `record btrace pt` with. Walking ourselves would repeat that logic
// and could disagree with gdb. The decoder reads code only through the
// CodeReader given to decode() (libipt's image callback), so it stays free
// of OS calls; taken branches are the instructions whose successor is not
// the next one in memory.
//
// The trace arrives in pieces (AUX chunks); a piece can end anywhere, even
// inside a packet, and the next piece continues the same stream unless
// bytes were lost between them. The stream is cut at its PSBs: a segment
// runs from one PSB to the next and is decoded once, when the PSB+ after it
// is complete, which tells where execution stood at its end (its FUP). The
// newest, still open segment is decoded again at every decode() from its
// PSB, and only the branches its packets already confirm are handed out
// (those before a TIP.PGD, or while packets remained): a user-only trace
// read while the thread is stopped ends with the TIP.PGD of its entry into
// the kernel, so everything is handed out then.
//
// What becomes of the stream:
//   - a taken branch (jcc whose TNT bit is 1, jmp/call/ret, a syscall that
//     continues elsewhere): PtItem{branch {from, to}};
//   - an asynchronous branch (FUP + TIP): {from: the interrupted
//     instruction, which has not run, to}, as the software tracer records
//     a signal's delivery;
//   - tracing off and on again (TIP.PGD at a syscall or an interrupt, then
//     TIP.PGE): nothing where it resumes where it stopped; a branch where
//     it resumes elsewhere (a signal handler, rt_sigreturn): from the
//     interrupted instruction (asynchronous stop) or from the last
//     instruction that ran (the syscall), to where it resumed;
//   - a decode error, an overflow (OVF), bytes lost between pieces, bytes
//     before the first PSB: a gap, PtItem{gap, branch.to = where decoding
//     resumed (0: not known yet)}; decoding syncs again at the next PSB.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/branch.h"
#include "decoder/code_reader.h"

namespace decoder {

struct PtItem {
  bool gap = false;  // trace was lost here; branch.to: where it resumed (0: unknown)
  Branch branch;
  bool operator==(const PtItem&) const = default;
};

// A whole PSB-to-PSB segment that decoded cleanly (no gap, error or OVF),
// as the CPU wrote it, and all its branches (the last one into the next
// PSB+'s FUP); it comes before the item numbered `at` of the same decode().
// The first `handed_out` branches were handed out as items by earlier
// decode() calls, while the segment was open (a stop read the trace in its
// middle): the store has them already, and BlockTrace::append_pt_segment
// replaces them by the segment when it still can.
struct PtWholeSegment {
  std::size_t at = 0;
  std::vector<uint8_t> packets;
  std::vector<Branch> branches;
  std::size_t handed_out = 0;
};

// One piece of the stream as read: bytes that continue it, or a loss.
struct PtPiece {
  bool lost = false;
  std::vector<uint8_t> bytes;
};

class PtStreamDecoder {
 public:
  // `origin`: where the thread was when tracing began (0: not known); a
  // trace that begins anywhere else begins with a gap.
  explicit PtStreamDecoder(uint64_t origin = 0) { state_.expect = origin; }
  void set_origin(uint64_t origin);

  // Adds `pieces` to the stream and returns what they complete, oldest
  // first. `code` must read the program's code as it was traced.
  // With `segments`, complete clean segments go there whole rather than
  // into the items, so a store can keep the CPU's packets.
  std::vector<PtItem> decode(const std::vector<PtPiece>& pieces, CodeReader& code,
                             std::vector<PtWholeSegment>* segments = nullptr);

  struct Stats {
    uint64_t errors = 0;     // decode errors (each a gap)
    uint64_t overflows = 0;  // OVF packets
    uint64_t losses = 0;     // lost pieces
    uint64_t skipped_bytes = 0;  // before a fresh stream's first PSB
  };
  const Stats& stats() const { return stats_; }
  // Bytes kept for the open segment (at most a PSB period, normally).
  std::size_t pending_bytes() const { return open_.size(); }
  // Items of the open segment handed out so far: the newest ones handed
  // out, when the open segment is clean so far (no gap after them). A
  // store keeps them unsealed (BlockTrace::hold_open) so that the whole
  // segment can replace them when it completes.
  std::size_t open_handed_out() const { return tail_gap_ ? 0 : open_emitted_; }

  // Where the walk stands between segments.
  struct WalkState {
    uint64_t expect = 0;       // the next instruction's address (0: unknown)
    uint64_t last_insn = 0;    // the last instruction that ran (0: none since a gap)
    uint64_t stopped_at = 0;   // tracing stopped before this instruction ran (async)
    bool gap = false;          // a loss whose resume address is not known yet
    bool jumped = false;       // the last instruction transfers wherever `expect` is
  };

 private:
  void decode_open(CodeReader& code, std::vector<PtItem>& out);
  void lose(CodeReader& code, std::vector<PtItem>& out);
  void count(const Stats& segment);

  WalkState state_;             // at the start of open_
  std::vector<uint8_t> open_;   // from the open segment's PSB (or a fresh stream's start)
  bool fresh_ = true;           // open_ may start before its first PSB
  std::size_t open_emitted_ = 0;  // items of open_ already handed out
  bool tail_gap_ = false;       // the walk ends in a loss not resolved yet
  bool gap_told_ = false;       // ... and an unresolved gap item says so
  std::vector<PtWholeSegment>* segments_ = nullptr;  // during decode()
  Stats stats_;
  Stats open_counted_;          // what decodes of the open segment counted so far
};

// FNV-1a, 64-bit: the hash of the code bytes a segment's walk read, so a
// store can tell that the code under a sealed segment changed since.
inline constexpr uint64_t kCodeHashStart = 0xcbf29ce484222325ull;
inline uint64_t code_hash(uint64_t hash, const uint8_t* bytes, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

// A segment written by encode_pt_segment (decoder/pt_encoder.h), decoded
// alone: it starts at its PSB+ with execution at `begin`, and its last
// branch goes to `end`. Gives its branches and the hash of the bytes of
// every instruction walked, in order; nullopt when it does not decode
// cleanly (a decode error, a gap, the walk never reaching `end`).
struct PtSegmentBranches {
  std::vector<Branch> branches;
  uint64_t code_hash = kCodeHashStart;
};
std::optional<PtSegmentBranches> decode_pt_segment(const uint8_t* data, std::size_t size, uint64_t begin,
                                                   uint64_t end, CodeReader& code);

}  // namespace decoder
