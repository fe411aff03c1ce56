#pragma once
// A replay cursor: one thread's position in its recorded history, moved one
// instruction at a time (O(1) amortised: decoded blocks are cached) or to
// the next breakpoint address in either direction, with rsp, rbp and stack
// memory (return addresses, saved frame pointers) rebuilt at the position.
//
// Positions: block k (branch sequence number k of the BlockTrace) holds the
// instructions from the target of branch k-1 (or oldest_begin()) through
// branch k's `from`; block end_sequence() is the live block, ending at the
// live pc. Position (k, i) means "instruction i of block k is about to
// execute". The live position is the last instruction of the live block.
// History begins at the oldest retained block, or just after the newest
// block that does not decode exactly to its end (a gap).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/block_trace.h"
#include "decoder/history_summaries.h"
#include "decoder/stack_tracking.h"

namespace decoder {

struct ReplayPosition {
  uint64_t sequence = 0;  // block number
  uint32_t index = 0;     // instruction within the block
  bool operator==(const ReplayPosition&) const = default;
  auto operator<=>(const ReplayPosition&) const = default;  // older < newer
};

enum class ReplayStop {
  Moved,         // one step done, still inside the history
  Breakpoint,    // stopped at an instruction whose address is a breakpoint
  HistoryBegin,  // at the oldest position (did not move if already there)
  HistoryEnd,    // at the live position
  Signal,        // at the point where a signal was delivered (signal())
  Interrupted,   // a continue told to stop by its ScanTurn: at the first instruction of the block it reached
};

// What a continue over a long history calls every kTurnBlocks blocks: how
// many blocks it has scanned and how many it may have to scan in all (to
// the end of the history). Returning false stops it there. It lets the
// server tell the client how far a scan of seconds has come and stop it
// at the client's interrupt (stub/server/connection.h).
using ScanTurn = std::function<bool(uint64_t scanned, uint64_t most)>;

// The thread as it is now: its pc and, when known, rsp/rbp.
struct LiveState {
  uint64_t pc = 0;
  StackState stack;
};

class ReplayCursor {
 public:
  // Starts at the live position. `trace` and `cache` must outlive the cursor
  // and `trace` must not change while it exists (the program is stopped).
  // `summaries` (optional, outliving the cursor, used for this trace only)
  // speeds up memory() over long histories; see history_summaries.h.
  ReplayCursor(const BlockTrace& trace, const LiveState& live, BlockCache& cache,
               HistorySummaries* summaries = nullptr);

  ReplayPosition position() const { return {seq_, index_}; }
  ReplayPosition live_position() const;
  bool at_live_end() const { return position() == live_position(); }
  uint64_t live_pc() const { return live_.pc; }
  uint64_t pc() const { return cur_->instructions[index_].address; }
  // The signal delivered at the position (BlockTrace::mark_signal), or 0.
  // As in gdb's record full, the delivery is a step of its own at that pc:
  // in time order, the pc before the delivery, then the delivery (where
  // signal() tells it and moves report ReplayStop::Signal), then whatever
  // runs next. A forward step arrives before the delivery and the next one
  // delivers it; a forward continue stops at the delivery; moving back,
  // every move stops at the delivery, and a step from it goes to before it.
  // A breakpoint at that pc stops a continue before the delivery, in both
  // directions (where a thread stood at a breakpoint when a signal came).
  // Not at the live end: a signal the thread is being given there (a crash
  // held at its end) has not been delivered in the history.
  int signal() const { return before_delivery_ || at_live_end() ? 0 : trace_.signal_at(seq_, pc()); }

  ReplayStop step_back();
  ReplayStop step_forward();
  // Move at least one instruction, then on until an instruction whose
  // address is in `breakpoints` (sorted ascending) or the end of history.
  // `turn`, if set, is called every kTurnBlocks blocks (see ScanTurn).
  ReplayStop continue_back(const std::vector<uint64_t>& breakpoints, const ScanTurn& turn = {});
  ReplayStop continue_forward(const std::vector<uint64_t>& breakpoints, const ScanTurn& turn = {});
  static constexpr uint64_t kTurnBlocks = uint64_t{1} << 16;
  void go_live_end();

  // rsp and rbp at the position, each when the history determines it.
  StackState stack();

  // Bytes of [addr, addr+len) at the position that the history determines:
  // those last written by a call (return address) or a push of rbp or of an
  // immediate, provided the slot stayed inside the stack (rsp never rose
  // above it) from that write to the position. nullopt for every other
  // byte: the caller decides (read-only mapping: the live bytes are right).
  std::vector<std::optional<uint8_t>> memory(uint64_t addr, std::size_t len);

  // Sums up at most `most` of the whole runs of the history that the
  // summaries lack, newest first, down to the runs a sweep finished before
  // (HistorySummaries::complete_below). Done at the live end of the stops
  // while the client is idle, it does ahead what the first read far back
  // would otherwise do at once. Returns how many runs were summed up (0
  // without summaries); all_summed_up() tells whether any is left.
  std::size_t sum_up_runs(std::size_t most = SIZE_MAX);
  bool all_summed_up() const;

  // "Instruction `index` of `total`" (0 = oldest), computed on demand:
  // O(blocks of history).
  struct Count {
    uint64_t index = 0;
    uint64_t total = 0;
  };
  Count instruction_number();
  // "Branch `index` of `total`" (0 = the trace's oldest block), in O(1):
  // what a status can tell at once of any history.
  Count branch_number() const { return {seq_ - first_seq_, end_seq_ - first_seq_}; }

 private:
  Block block(uint64_t seq) const;
  const DecodedBlock& decoded(uint64_t seq);
  // Whether block `seq` (`span`, decoded now as `now`) ran other bytes than
  // the code holds now (BlockTrace::block_code).
  bool rewritten(uint64_t seq, const Block& span, const DecodedBlock& now);
  // Moves to the last instruction of block seq_-1 when it is part of the
  // history; false at the start of history.
  bool enter_older();
  void enter_newer();
  uint64_t find_floor();
  bool is_floor(uint64_t seq);  // settles floor_ when true
  ReplayStop stop_at_block(uint64_t seq, bool forward);  // an interrupted continue: at block seq's first instruction
  StackState start_state(uint64_t seq);
  StackState end_state(uint64_t seq) const;
  // The state right after the branch `from` to `to` ran, from the one before it.
  static StackState state_after_branch(const ReplayInstruction& from, uint64_t to, const StackState& before);
  std::vector<StackState> block_states(uint64_t seq, const DecodedBlock& block);
  // block_states from the states at the block's two ends, into `out`
  // (summary() keeps its vectors from block to block).
  static void states_between(const DecodedBlock& block, const StackState& start, const StackState& end,
                             std::vector<StackState>& forward, std::vector<StackState>& out);

  // An instruction-by-instruction walk from the cursor towards the start of
  // history, for memory(); index is the instruction the walk stands on.
  struct BackwardWalk {
    uint64_t seq = 0;
    const DecodedBlock* block = nullptr;
    std::vector<StackState> states;  // before each instruction of block
    std::size_t index = 0;
    ReplayPosition position() const { return {seq, static_cast<uint32_t>(index)}; }
    const ReplayInstruction& instruction() const { return block->instructions[index]; }
    const StackState& before() const { return states[index]; }
  };
  BackwardWalk walk_from_here();
  // At the start of block walk.seq: passes older runs (summaries_) in
  // which no call or push wrote a byte of [addr, addr + decided.size())
  // still open and where every rsp is known, ending as walking them would.
  void pass_runs(BackwardWalk& walk, uint64_t addr, const std::vector<bool>& decided, uint64_t& stale_below);
  const RunSummary& summary(uint64_t run);
  std::vector<StackState> summary_forward_, summary_states_;  // summary()'s, kept for their room
  // Steps the walk to the previous instruction; false at the start of
  // history (or a gap, after which history starts).
  bool walk_back(BackwardWalk& walk);

  // The walk behind memory(): also tells the newest deciding write and
  // whether it went back to the start of history.
  std::vector<std::optional<uint8_t>> walk_memory(uint64_t addr, std::size_t len,
                                                  std::optional<ReplayPosition>* newest_write,
                                                  bool* reached_start);
  // True when no instruction at positions [low, position()) wrote a byte of
  // [addr, addr+len) or made one stale (see memory()).
  bool untouched_since(ReplayPosition low, uint64_t addr, std::size_t len);

  // Fully known reads, remembered: gdb reads the same far slots (main's
  // return address) at every stop, and each fresh walk would go back to
  // where they were written. An entry holds for every position in
  // (newest_write, verified_to]; moving forward only checks the new part.
  struct MemoryMemo {
    std::vector<uint8_t> bytes;
    ReplayPosition newest_write;
    ReplayPosition verified_to;
    bool never_written = false;  // no byte written anywhere before verified_to
  };
  std::map<std::pair<uint64_t, std::size_t>, MemoryMemo> memory_memo_;

  const BlockTrace& trace_;
  LiveState live_;
  BlockCache& cache_;
  HistorySummaries* summaries_;
  uint64_t first_seq_;
  uint64_t end_seq_;
  DecodedBlock live_block_;
  // Blocks [validated_, end_seq_] are known to decode exactly; floor_ is set
  // once the oldest block of history is known.
  uint64_t validated_;
  std::optional<uint64_t> floor_;

  uint64_t seq_ = 0;
  uint32_t index_ = 0;
  bool before_delivery_ = false;  // at a signal's point, the delivery undone
  const DecodedBlock* cur_ = nullptr;
};

}  // namespace decoder
