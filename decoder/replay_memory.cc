// ReplayCursor::memory: stack slots in the past, from the calls and pushes
// of the history.
#include <algorithm>

#include "decoder/replay_history.h"

namespace decoder {
namespace {

struct SlotWrite {
  uint64_t low = 0;   // first byte written
  uint64_t size = 0;
  std::optional<uint64_t> value;
};

// The stack write instruction `insn` does when it runs in `before`;
// nullopt for instructions that write no stack slot.
std::optional<SlotWrite> slot_write(const ReplayInstruction& insn, const StackState& before) {
  const StackEffect& e = insn.stack;
  if (e.op == StackOp::Call) return SlotWrite{*before.rsp - 8, 8, insn.next_address()};
  if (e.op != StackOp::Push) return std::nullopt;
  SlotWrite w{*before.rsp - static_cast<uint64_t>(e.value), static_cast<uint64_t>(e.value), e.pushed_value};
  if (e.pushes_rbp) w.value = before.rbp;
  return w;
}

// True for instructions that may store to memory at an address the history
// cannot tell. Push and call write only their own slot (slot_write); the
// other stack operations write no memory at all (pop to a memory operand
// would, but compilers do not emit it).
bool may_store_unseen(const ReplayInstruction& insn) {
  switch (insn.stack.op) {
    case StackOp::None: return true;
    case StackOp::Push:
    case StackOp::Call:
    case StackOp::Pop:
    case StackOp::AdjustRsp:
    case StackOp::AndRsp:
    case StackOp::RbpFromRsp:
    case StackOp::RspFromRbp:
    case StackOp::Leave:
    case StackOp::Return: return false;
  }
  return true;
}

}  // namespace

ReplayCursor::BackwardWalk ReplayCursor::walk_from_here() {
  return BackwardWalk{seq_, cur_, block_states(seq_, *cur_), index_};
}

// Block by block as block_states would go, but each branch and snapshot
// read once: block k's end (its branch and the stack snapshot before it)
// is block k+1's start. Every stop of a program with several threads sums
// up the runs it recorded since the last (sum_up_runs), so this is most of
// what recording costs there.
const RunSummary& ReplayCursor::summary(uint64_t run) {
  if (const RunSummary* known = summaries_->find(run)) return *known;
  RunSummary s;
  s.passable = true;
  const uint64_t n = summaries_->blocks_per_run();
  const bool stacks = trace_.has_stacks();
  // Block k's start address, and the state before its first instruction.
  uint64_t begin = run * n == first_seq_ ? trace_.oldest_begin() : trace_.at(run * n - 1).to;
  StackState start = start_state(run * n);
  for (uint64_t k = run * n; k < (run + 1) * n && s.passable; ++k) {
    // A whole run ends before the live end: every block of it ends at a
    // recorded branch.
    const Branch branch = trace_.at(k);
    const Block span{begin, branch.from};
    const DecodedBlock& block = cache_.get(span);
    if (!block.complete || block.instructions.empty() || rewritten(k, span, block)) {
      s.passable = false;
      break;
    }
    StackState end;
    if (stacks) {
      const StackSnapshot snap = trace_.stack_at(k);
      end = StackState{snap.rsp, snap.rbp};
    }
    states_between(block, start, end, summary_forward_, summary_states_);
    for (std::size_t i = 0; i < block.instructions.size(); ++i) {
      const StackState& before = summary_states_[i];
      if (!before.rsp) {
        s.passable = false;
        break;
      }
      const ReplayInstruction& insn = block.instructions[i];
      if (auto w = slot_write(insn, before)) {
        s.write_low = std::min(s.write_low, w->low);
        s.write_high = std::max(s.write_high, w->low + (w->size - 1));
      } else if (may_store_unseen(insn)) {
        s.unseen_rsp_max = std::max(s.unseen_rsp_max, *before.rsp);
      }
    }
    // Block k+1 starts where this one's branch went, in the state after it
    // (start_state(k + 1) without reading them again).
    begin = branch.to;
    start = stacks ? state_after_branch(block.instructions.back(), branch.to, end) : StackState{};
  }
  return summaries_->put(run, s);
}

std::size_t ReplayCursor::sum_up_runs(std::size_t most) {
  if (summaries_ == nullptr) return 0;
  const uint64_t whole = summaries_->end_whole_run(end_seq_);
  const uint64_t lowest = std::max(summaries_->first_whole_run(first_seq_), summaries_->complete_below());
  std::size_t made = 0;
  for (uint64_t run = whole; run > lowest; --run) {
    if (summaries_->find(run - 1) != nullptr) continue;  // summed up by a read, or an unfinished sweep
    if (made == most) return made;
    summary(run - 1);
    ++made;
  }
  summaries_->set_complete_below(whole);
  return made;
}

bool ReplayCursor::all_summed_up() const {
  return summaries_ == nullptr || summaries_->all_summed_up(end_seq_);
}

void ReplayCursor::pass_runs(BackwardWalk& walk, uint64_t addr, const std::vector<bool>& decided,
                             uint64_t& stale_below) {
  if (summaries_ == nullptr) return;
  const uint64_t n = summaries_->blocks_per_run();
  while (walk.index == 0 && walk.seq > 0) {
    // The bytes still open: neither decided nor stale. Writes to the others
    // no longer matter (gdb reads whole 64-byte lines, whose newer bytes a
    // loop's calls write again and again while the older wait far back).
    auto open = [&](std::size_t i) { return !decided[i] && addr + i >= stale_below; };
    std::size_t lo = 0, hi = decided.size();
    while (lo < decided.size() && !open(lo)) ++lo;
    while (hi > lo && !open(hi - 1)) --hi;
    if (lo >= hi) return;
    const uint64_t open_low = addr + lo, open_high = addr + (hi - 1);
    // The run holding the block before the walk; it may go on past the
    // walk's block (then only its older part is passed).
    const uint64_t run = (walk.seq - 1) / n, first = run * n;
    if (first < first_seq_ || (floor_ && first < *floor_) || first + n > end_seq_) return;
    const RunSummary& s = summary(run);
    if (!s.passable || (s.write_low <= open_high && open_low <= s.write_high)) return;
    // A whole run raises stale_below as walking it would. Of a part, only
    // the whole run's bound is known: pass it only when that bound cannot
    // make an open byte stale, as walking the part then could not either.
    if (walk.seq != first + n && s.unseen_rsp_max > open_low) return;
    stale_below = std::max(stale_below, s.unseen_rsp_max);
    // As if the walk had just done the run's first instruction: the next
    // walk_back goes to the block before, and reads only that one.
    walk.seq = first;
    walk.block = nullptr;
    walk.states.clear();
  }
}

bool ReplayCursor::walk_back(BackwardWalk& walk) {
  if (walk.index == 0) {
    if ((floor_ && walk.seq <= *floor_) || walk.seq == first_seq_) return false;
    const DecodedBlock& older = decoded(walk.seq - 1);
    if (!older.complete || older.instructions.empty()) return false;
    --walk.seq;
    walk.block = &older;
    walk.states = block_states(walk.seq, older);
    walk.index = older.instructions.size();
  }
  --walk.index;
  return true;
}

// Walks back from the position one instruction at a time. A byte at A is
// decided by the newest call or push covering it, unless some instruction
// that may store unseen (a plain mov, a syscall, ...) ran in between while
// rsp was above A: then A was free stack (the red zone, or popped space) and
// may hold anything. Stores at or above rsp are assumed not to hit return
// addresses or saved frame pointers (compilers never write them), so a slot
// just popped by `pop rbp` or `leave` still holds its value at the `ret`
// after it, which is what gdb's unwinder reads there. The walk ends when
// every byte is decided or stale, at an unknown rsp (an asynchronous branch
// such as a signal frame), or at the start of history.
std::vector<std::optional<uint8_t>> ReplayCursor::walk_memory(uint64_t addr, std::size_t len,
                                                              std::optional<ReplayPosition>* newest_write,
                                                              bool* reached_start) {
  *reached_start = false;
  std::vector<std::optional<uint8_t>> out(len);
  std::vector<bool> decided(len, false);
  BackwardWalk walk = walk_from_here();
  if (!walk.before().rsp || len == 0) return out;
  uint64_t stale_below = 0;  // bytes below this may have been stored to unseen
  std::size_t open = len;
  const uint64_t last = addr + (len - 1);
  while (open > 0 && last >= stale_below) {
    pass_runs(walk, addr, decided, stale_below);
    if (last < stale_below) break;
    if (!walk_back(walk)) {
      *reached_start = true;
      break;
    }
    const StackState& before = walk.before();
    if (!before.rsp) break;
    const ReplayInstruction& insn = walk.instruction();
    if (auto w = slot_write(insn, before)) {
      const uint64_t from = std::max({w->low, addr, stale_below});
      const uint64_t to = std::min(w->low + w->size - 1, last);
      for (uint64_t a = from; a <= to && from <= to; ++a) {
        const std::size_t at = static_cast<std::size_t>(a - addr);
        if (decided[at]) continue;
        decided[at] = true;
        if (!*newest_write) *newest_write = walk.position();
        --open;
        if (w->value) out[at] = static_cast<uint8_t>(*w->value >> (8 * (a - w->low)));
      }
    } else if (may_store_unseen(insn)) {
      stale_below = std::max(stale_below, *before.rsp);
    }
  }
  return out;
}

bool ReplayCursor::untouched_since(ReplayPosition low, uint64_t addr, std::size_t len) {
  BackwardWalk walk = walk_from_here();
  const uint64_t last = addr + (len - 1);
  while (walk.position() > low) {
    if (!walk_back(walk)) return false;
    const StackState& before = walk.before();
    if (!before.rsp) return false;
    const ReplayInstruction& insn = walk.instruction();
    if (auto w = slot_write(insn, before)) {
      if (w->low <= last && addr <= w->low + w->size - 1) return false;
    } else if (may_store_unseen(insn) && *before.rsp > addr) {
      return false;
    }
  }
  return true;
}

std::vector<std::optional<uint8_t>> ReplayCursor::memory(uint64_t addr, std::size_t len) {
  const ReplayPosition here = position();
  const auto key = std::make_pair(addr, len);
  if (auto it = memory_memo_.find(key); it != memory_memo_.end()) {
    MemoryMemo& memo = it->second;
    bool valid = (memo.never_written || memo.newest_write < here) &&
                 (here <= memo.verified_to || untouched_since(memo.verified_to, addr, len));
    if (valid) {
      memo.verified_to = std::max(memo.verified_to, here);
      if (memo.never_written) return std::vector<std::optional<uint8_t>>(len);
      return std::vector<std::optional<uint8_t>>(memo.bytes.begin(), memo.bytes.end());
    }
    memory_memo_.erase(it);
  }
  std::optional<ReplayPosition> newest_write;
  bool reached_start = false;
  auto out = walk_memory(addr, len, &newest_write, &reached_start);
  const bool all_known = std::all_of(out.begin(), out.end(), [](const auto& b) { return b.has_value(); });
  if (newest_write && all_known) {
    MemoryMemo memo{{}, *newest_write, here, false};
    for (const auto& b : out) memo.bytes.push_back(*b);
    memory_memo_.emplace(key, std::move(memo));
  } else if (!newest_write && reached_start) {
    // Never written in the whole history before here: unknown at every
    // older position too (staleness cannot matter for it).
    memory_memo_.emplace(key, MemoryMemo{{}, ReplayPosition{}, here, true});
  }
  return out;
}

}  // namespace decoder
