#pragma once
// One thread's branch trace: the taken branches (from, to) in the order they
// happened, bounded like a BTS buffer. Capacity is counted in 24-byte BTS
// records so that gdb's `set record btrace bts buffer-size` means the same
// here as on hardware. It is a bound, not an allocation: the store grows in
// small chunks as branches come (std::deque), and dropping the oldest frees
// theirs, so a large buffer costs only what has been recorded.
//
// Sequence numbers: every appended branch gets the next number (0, 1, ...);
// readers remember the number they have seen up to, which is what qXfer
// btrace `new`/`delta` reads and replay cursors need. Dropping old branches
// never renumbers the rest.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace decoder {

struct Branch {
  uint64_t from = 0;  // address of the branch instruction (or where the thread was interrupted)
  uint64_t to = 0;    // where execution continued
  bool operator==(const Branch&) const = default;
};

// A block as gdb's BTS format describes it: from a branch target (`begin`)
// to the address of the last instruction executed before the next taken
// branch (`end`, inclusive).
struct Block {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool operator==(const Block&) const = default;
};

// rsp and rbp of the thread at a branch, before it executed. The software
// tracer stops there anyway and records them, so replay can rebuild the
// stack pointer and frame pointer at every instruction of history (hardware
// traces carry none: has_stacks() is false then).
struct StackSnapshot {
  uint64_t rsp = 0;
  uint64_t rbp = 0;
  bool operator==(const StackSnapshot&) const = default;
};

enum class OverflowPolicy {
  DropOldest,  // ring: the newest branches win (BTS default)
  Stop,        // refuse to append; the tracer stops the program and reports it
};

class BlockTrace {
 public:
  static constexpr std::size_t kBtsRecordSize = 24;

  // `origin`: where the thread was when tracing began (the first block's begin).
  BlockTrace(uint64_t origin, std::size_t capacity_records,
             OverflowPolicy policy = OverflowPolicy::DropOldest);

  // Appends one taken branch. False (and nothing stored) only when the
  // buffer is full under OverflowPolicy::Stop.
  bool append(uint64_t from, uint64_t to);
  // The same, with the registers at `from`. A trace holds snapshots for all
  // of its branches or for none: mixing the two forms is a caller bug.
  bool append(uint64_t from, uint64_t to, const StackSnapshot& at_from);
  bool has_stacks() const { return !stacks_.empty(); }
  // Precondition: has_stacks() and first_sequence() <= seq < end_sequence().
  const StackSnapshot& stack_at(uint64_t seq) const;

  std::size_t size() const { return branches_.size(); }
  std::size_t capacity() const { return capacity_; }
  bool full() const { return branches_.size() >= capacity_; }
  OverflowPolicy policy() const { return policy_; }

  // Sequence numbers of the oldest retained branch and one past the newest.
  uint64_t first_sequence() const { return next_sequence_ - branches_.size(); }
  uint64_t end_sequence() const { return next_sequence_; }
  // True when branches numbered >= `seq` were dropped before a reader saw them.
  bool lost_since(uint64_t seq) const { return seq < first_sequence(); }
  // Precondition: first_sequence() <= seq < end_sequence().
  const Branch& at(uint64_t seq) const;

  // Where the oldest retained block begins: the target of the newest dropped
  // branch, or the origin when nothing was dropped.
  uint64_t oldest_begin() const { return oldest_begin_; }

  // Blocks for branches [from_seq, end_sequence()), oldest first; the last
  // block ends at `current_pc`. The first block begins at the target of
  // branch from_seq-1 (or oldest_begin() when from_seq is the first retained).
  // Precondition: first_sequence() <= from_seq <= end_sequence().
  std::vector<Block> blocks(uint64_t from_seq, uint64_t current_pc) const;

  // Drops everything; tracing goes on from `origin`.
  void clear(uint64_t origin);
  // New capacity; keeps the newest branches that fit.
  void resize(std::size_t capacity_records);

 private:
  bool make_room();
  void drop_oldest();

  std::deque<Branch> branches_;        // oldest first
  std::deque<StackSnapshot> stacks_;   // parallel to branches_, or empty
  std::size_t capacity_;
  uint64_t next_sequence_ = 0;
  uint64_t oldest_begin_ = 0;
  OverflowPolicy policy_;
};

// Capacity in records for a buffer of `bytes` (at least one record).
std::size_t bts_records_for_bytes(uint64_t bytes);

}  // namespace decoder
