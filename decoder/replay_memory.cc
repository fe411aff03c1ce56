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

}  // namespace

// Walks back from the position one instruction at a time. A byte at A is
// decided by the newest write covering it as long as rsp stayed <= A from
// that write up to the position (the slot was never popped, so nothing but
// an explicit store could have replaced it; compilers do not store over
// return addresses or saved frame pointers). Once rsp is seen above A,
// older writes are stale: the byte is unknown. The walk also ends at an
// unknown rsp, at the start of history, or when no byte is left open.
std::vector<std::optional<uint8_t>> ReplayCursor::memory(uint64_t addr, std::size_t len) {
  std::vector<std::optional<uint8_t>> out(len);
  std::vector<bool> decided(len, false);
  uint64_t k = seq_;
  const DecodedBlock* block = cur_;
  std::vector<StackState> states = block_states(k, *block);
  std::size_t i = index_;
  if (!states[i].rsp || len == 0) return out;
  uint64_t max_rsp = *states[i].rsp;
  const uint64_t last = addr + (len - 1);
  while (last >= max_rsp) {
    if (i == 0) {
      if ((floor_ && k <= *floor_) || k == first_seq_) break;
      const DecodedBlock& older = decoded(k - 1);
      if (!older.complete || older.instructions.empty()) break;
      --k;
      block = &older;
      states = block_states(k, *block);
      i = block->instructions.size();
    }
    --i;
    const StackState& before = states[i];
    if (!before.rsp) break;
    if (auto w = slot_write(block->instructions[i], before)) {
      // Bytes below max_rsp are stale for this and every older write.
      const uint64_t from = std::max({w->low, addr, max_rsp});
      const uint64_t to = std::min(w->low + w->size - 1, last);
      for (uint64_t a = from; a <= to && from <= to; ++a) {
        const std::size_t at = static_cast<std::size_t>(a - addr);
        if (decided[at]) continue;
        decided[at] = true;
        if (w->value) out[at] = static_cast<uint8_t>(*w->value >> (8 * (a - w->low)));
      }
    }
    max_rsp = std::max(max_rsp, *before.rsp);
  }
  return out;
}

}  // namespace decoder
