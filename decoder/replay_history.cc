#include "decoder/replay_history.h"

#include <algorithm>
#include <utility>

namespace decoder {
namespace {

bool contains(const std::vector<uint64_t>& sorted, uint64_t addr) {
  return std::binary_search(sorted.begin(), sorted.end(), addr);
}

// True when some breakpoint address lies in [begin, end]: the only blocks a
// breakpoint scan has to decode.
bool may_contain(const std::vector<uint64_t>& sorted, const Block& block) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), block.begin);
  return it != sorted.end() && *it <= block.end;
}

}  // namespace

ReplayCursor::ReplayCursor(const BlockTrace& trace, const LiveState& live, BlockCache& cache,
                           HistorySummaries* summaries)
    : trace_(trace),
      live_(live),
      cache_(cache),
      summaries_(summaries),
      first_seq_(trace.first_sequence()),
      end_seq_(trace.end_sequence()),
      validated_(trace.end_sequence()) {
  live_block_ = cache_.get(block(end_seq_));
  if (!live_block_.complete) {
    // Without a decodable live block there is no history to walk into.
    ReplayInstruction at_pc;
    at_pc.address = live.pc;
    live_block_.instructions.assign(1, at_pc);
    floor_ = end_seq_;
  }
  go_live_end();
}

ReplayPosition ReplayCursor::live_position() const {
  return {end_seq_, static_cast<uint32_t>(live_block_.instructions.size() - 1)};
}

void ReplayCursor::go_live_end() {
  before_delivery_ = false;
  seq_ = end_seq_;
  cur_ = &live_block_;
  index_ = static_cast<uint32_t>(live_block_.instructions.size() - 1);
}

Block ReplayCursor::block(uint64_t seq) const {
  uint64_t begin = seq == first_seq_ ? trace_.oldest_begin() : trace_.at(seq - 1).to;
  uint64_t end = seq == end_seq_ ? live_.pc : trace_.at(seq).from;
  return Block{begin, end};
}

const DecodedBlock& ReplayCursor::decoded(uint64_t seq) {
  if (seq == end_seq_) return live_block_;
  const Block span = block(seq);
  const DecodedBlock& now = cache_.get(span);
  // Today's instructions are not the ones that ran there: a gap, never a guess.
  static const DecodedBlock kRewritten;
  return rewritten(seq, span, now) ? kRewritten : now;
}

bool ReplayCursor::rewritten(uint64_t seq, const Block& span, const DecodedBlock& now) {
  const std::optional<uint64_t> ran = trace_.block_code(seq);
  return ran && now.complete && cache_.layout_hash_of(span) != ran;
}

bool ReplayCursor::enter_older() {
  if (floor_ && seq_ <= *floor_) return false;
  if (seq_ == first_seq_) {
    floor_ = seq_;
    return false;
  }
  const DecodedBlock& older = decoded(seq_ - 1);
  if (!older.complete || older.instructions.empty()) {
    floor_ = seq_;
    return false;
  }
  --seq_;
  validated_ = std::min(validated_, seq_);
  cur_ = &older;
  index_ = static_cast<uint32_t>(older.instructions.size() - 1);
  return true;
}

// Blocks newer than the position were validated on the way back.
void ReplayCursor::enter_newer() {
  ++seq_;
  cur_ = &decoded(seq_);
  index_ = 0;
}

uint64_t ReplayCursor::find_floor() {
  if (floor_) return *floor_;
  uint64_t k = validated_;
  while (!is_floor(k)) validated_ = --k;
  return k;
}

ReplayStop ReplayCursor::step_back() {
  if (!before_delivery_ && signal() != 0) {
    before_delivery_ = true;
    return ReplayStop::Moved;
  }
  before_delivery_ = false;
  if (index_ > 0) {
    --index_;
  } else if (!enter_older()) {
    return ReplayStop::HistoryBegin;
  }
  return signal() != 0 ? ReplayStop::Signal : ReplayStop::Moved;
}

ReplayStop ReplayCursor::step_forward() {
  if (at_live_end()) return ReplayStop::HistoryEnd;
  if (std::exchange(before_delivery_, false)) return ReplayStop::Signal;
  if (index_ + 1 < cur_->instructions.size()) {
    ++index_;
  } else {
    enter_newer();
  }
  if (at_live_end()) return ReplayStop::HistoryEnd;
  // Arriving by a step, the signal is not delivered yet: the next step
  // delivers it.
  before_delivery_ = signal() != 0;
  return ReplayStop::Moved;
}

// True when block `seq` is the oldest of the history: the first retained,
// or the one after a block that does not decode exactly (a gap).
bool ReplayCursor::is_floor(uint64_t seq) {
  if (floor_) return seq == *floor_;
  if (seq > validated_) return false;  // block seq-1 is known to decode
  if (seq != first_seq_) {
    const DecodedBlock& older = decoded(seq - 1);
    if (older.complete && !older.instructions.empty()) return false;
  }
  floor_ = seq;
  return true;
}

ReplayStop ReplayCursor::continue_back(const std::vector<uint64_t>& breakpoints, const ScanTurn& turn) {
  // A breakpoint on the oldest instruction is the end of history there, as
  // in gdb's record full: the stop says replaylog:begin.
  auto at_breakpoint = [this] {
    return index_ == 0 && is_floor(seq_) ? ReplayStop::HistoryBegin : ReplayStop::Breakpoint;
  };
  // From a delivery the first state back is its pc before it: a thread
  // that stood at a breakpoint there when the signal came (a timer's,
  // while the client looked) was stopped by it first, and record full
  // stops there too. Skipped, a reverse-continue went on to an older
  // visit, or showed a newer one for it.
  if (!before_delivery_ && signal() != 0) {
    before_delivery_ = true;
    if (contains(breakpoints, pc())) return at_breakpoint();
  }
  before_delivery_ = false;
  while (index_ > 0) {
    --index_;
    if (signal() != 0) return ReplayStop::Signal;
    if (contains(breakpoints, pc())) return at_breakpoint();
  }
  // Older blocks, newest first. Each is checked to be part of the history
  // as the scan reaches it (blocks at or above validated_ were already), so
  // a breakpoint near costs the way to it, not a walk to the history's
  // start; otherwise only range checks: a block is searched (decoded from
  // the cache) only when a breakpoint address lies inside it.
  uint64_t k = seq_;
  const uint64_t start = seq_;
  while (!is_floor(k)) {
    // Block k was checked to decode (it is the cursor's, or is_floor(k+1)
    // found it whole): a place to stop.
    if (turn && (start - k) % kTurnBlocks == kTurnBlocks - 1 && !turn(start - k, start - first_seq_)) {
      return stop_at_block(k, false);
    }
    --k;
    validated_ = std::min(validated_, k);
    const bool signalled = trace_.signal_in(k);
    if (!signalled && !may_contain(breakpoints, block(k))) continue;
    const DecodedBlock& d = decoded(k);
    for (std::size_t j = d.instructions.size(); j-- > 0;) {
      const uint64_t address = d.instructions[j].address;
      const bool signal_here = signalled && trace_.signal_at(k, address) != 0;
      if (signal_here || contains(breakpoints, address)) {
        seq_ = k;
        cur_ = &d;
        index_ = static_cast<uint32_t>(j);
        return signal_here ? ReplayStop::Signal : at_breakpoint();
      }
    }
  }
  seq_ = k;
  cur_ = &decoded(k);
  index_ = 0;
  return ReplayStop::HistoryBegin;
}

ReplayStop ReplayCursor::stop_at_block(uint64_t seq, bool forward) {
  seq_ = seq;
  cur_ = &decoded(seq);
  index_ = 0;
  // Arriving forward, a signal delivered there is still to come (as after
  // a step); going back, the scan would have stopped at it.
  before_delivery_ = false;  // signal() below reads the delivery itself
  before_delivery_ = forward && !at_live_end() && signal() != 0;
  return ReplayStop::Interrupted;
}

ReplayStop ReplayCursor::continue_forward(const std::vector<uint64_t>& breakpoints, const ScanTurn& turn) {
  if (at_live_end()) return ReplayStop::HistoryEnd;
  if (std::exchange(before_delivery_, false)) return ReplayStop::Signal;
  // Arriving where a signal was delivered at a breakpoint, the breakpoint
  // comes first (the state before the delivery, where the next move
  // delivers it), as going back.
  while (index_ + 1 < cur_->instructions.size()) {
    ++index_;
    if (contains(breakpoints, pc())) {
      before_delivery_ = signal() != 0;
      return ReplayStop::Breakpoint;
    }
    if (signal() != 0) return ReplayStop::Signal;
  }
  const uint64_t start = seq_;
  for (uint64_t k = seq_ + 1; k <= end_seq_; ++k) {
    // Blocks newer than the position were checked on the way back.
    if (turn && (k - start) % kTurnBlocks == 0 && !turn(k - start, end_seq_ - start)) return stop_at_block(k, true);
    const bool signalled = trace_.signal_in(k);
    if (!signalled && !may_contain(breakpoints, block(k))) continue;
    const DecodedBlock& d = decoded(k);
    for (std::size_t j = 0; j < d.instructions.size(); ++j) {
      const uint64_t address = d.instructions[j].address;
      const bool signal_here = signalled && trace_.signal_at(k, address) != 0;
      if (signal_here || contains(breakpoints, address)) {
        seq_ = k;
        cur_ = &d;
        index_ = static_cast<uint32_t>(j);
        if (contains(breakpoints, address)) {
          before_delivery_ = signal_here && signal() != 0;
          return ReplayStop::Breakpoint;
        }
        if (signal_here && signal() != 0) return ReplayStop::Signal;
        continue;
      }
    }
  }
  go_live_end();
  return ReplayStop::HistoryEnd;
}

// The state right after branch seq-1 executed: its snapshot moved through
// the branch instruction itself.
StackState ReplayCursor::start_state(uint64_t seq) {
  if (seq == first_seq_ || !trace_.has_stacks()) return {};
  const Branch branch = trace_.at(seq - 1);
  const DecodedBlock& prev = decoded(seq - 1);
  std::optional<ReplayInstruction> from;
  if (prev.complete && !prev.instructions.empty()) {
    from = prev.instructions.back();
  } else if (trace_.block_code(seq - 1)) {
    return {};  // its code was rewritten since: the branch instruction is not known
  } else {
    from = cache_.instruction_at(branch.from);
  }
  if (!from) return {};
  const StackSnapshot snap = trace_.stack_at(seq - 1);
  return state_after_branch(*from, branch.to, StackState{snap.rsp, snap.rbp});
}

StackState ReplayCursor::state_after_branch(const ReplayInstruction& from, uint64_t to, const StackState& before) {
  Instruction insn;
  insn.address = from.address;
  insn.size = from.size;
  insn.kind = from.kind;
  insn.target = from.target;
  insn.stack = from.stack;
  return after_branch(insn, to, before);
}

StackState ReplayCursor::end_state(uint64_t seq) const {
  if (seq == end_seq_) return live_.stack;
  if (!trace_.has_stacks()) return {};
  const StackSnapshot snap = trace_.stack_at(seq);
  return StackState{snap.rsp, snap.rbp};
}

// Forward from the block's start and backward from its end snapshot; each
// register is taken from whichever pass knows it.
std::vector<StackState> ReplayCursor::block_states(uint64_t seq, const DecodedBlock& block) {
  std::vector<StackState> forward, out;
  states_between(block, start_state(seq), end_state(seq), forward, out);
  return out;
}

void ReplayCursor::states_between(const DecodedBlock& block, const StackState& start, const StackState& end,
                                  std::vector<StackState>& forward, std::vector<StackState>& out) {
  const std::size_t n = block.instructions.size();
  forward.resize(n);
  out.resize(n);
  if (n == 0) return;
  forward[0] = start;
  for (std::size_t i = 1; i < n; ++i) {
    forward[i] = decoder::step_forward(block.instructions[i - 1].stack, forward[i - 1]);
  }
  StackState backward = end;
  for (std::size_t i = n; i-- > 0;) {
    if (i + 1 < n) backward = decoder::step_backward(block.instructions[i].stack, backward);
    out[i] = merge(backward, forward[i]);
  }
}

StackState ReplayCursor::stack() { return block_states(seq_, *cur_)[index_]; }

ReplayCursor::Count ReplayCursor::instruction_number() {
  const uint64_t floor = find_floor();
  Count count;
  for (uint64_t k = floor; k <= end_seq_; ++k) {
    const uint64_t size = decoded(k).instructions.size();
    if (k < seq_) count.index += size;
    count.total += size;
  }
  count.index += index_;
  return count;
}

}  // namespace decoder
