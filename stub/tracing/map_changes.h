#pragma once
// Where the program's memory map changed while it was recorded, and when:
// each mmap, munmap, mprotect, mremap or madvise a traced thread made (and
// each write into its own memory file), as a range of addresses and the
// points of every thread's history that may lie before it.
//
// The history alone (no checkpoint copy) knows few bytes of memory; the
// rest of a read in the past comes from the live program where a mapping
// holds bytes that cannot have changed since (stub/replay/replay_engine.h:
// code, a file's unwritten pages). That holds only if the mapping was
// there, the same, at the past point: a file mapped over another at the
// same address, a private page dropped back to the file's bytes
// (MADV_DONTNEED) or code made writable and patched all leave a present
// that reads like constant bytes. Those ranges are named here.
//
// A change is noted at the stop after the call, in the calling thread's
// history at that thread's trace end: its points up to there may lie
// before it. Other threads ran meanwhile where nobody knows: all their
// points up to then may lie before it (all of those threads' history, for
// this range). A thread whose history began after the change does not
// see it. No OS calls: the tracer tells, the replay asks.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace stub::tracing {

class MapChanges {
 public:
  // Changes kept before neighbours merge (each merge widens a range and
  // keeps every thread's later bound: more unknown bytes, never fewer; a
  // library's range merged with one changed late loses its past). About
  // 100 bytes each.
  static constexpr std::size_t kMaxChanges = 16384;

  // [begin, end) changed by `thread` with `sequence` branches in its
  // history; `others`: the other threads with a history then.
  void note(uint64_t begin, uint64_t end, pid_t thread, uint64_t sequence, std::span<const pid_t> others);
  // [begin, end) changed while every thread with a history stood still,
  // each with the given number of branches in its history (the client's
  // write at a stop).
  void note_stopped(uint64_t begin, uint64_t end, std::span<const std::pair<pid_t, uint64_t>> threads);
  // The parts of [begin, end) that changed after the point of `thread`'s
  // history at `sequence`, sorted and disjoint.
  std::vector<std::pair<uint64_t, uint64_t>> changed_after(pid_t thread, uint64_t sequence, uint64_t begin,
                                                           uint64_t end) const;
  void clear() { changes_.clear(); }
  std::size_t size() const { return changes_.size(); }

 private:
  struct Change {
    uint64_t begin = 0, end = 0;
    // Per thread: its points with a smaller sequence may lie before the change.
    std::vector<std::pair<pid_t, uint64_t>> before;
  };
  void add(Change change);
  void merge_closest();

  std::vector<Change> changes_;  // sorted by begin
};

}  // namespace stub::tracing
