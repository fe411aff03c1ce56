#pragma once
// Checkpoints of a recording: stopped copies of the program
// (stub/process/process_copy.h), each standing at a known point of one
// thread's history, from which the replay engine re-executes to any later
// point (stub/replay/past_state.h).
//
// The software tracer takes one when recording starts, right after every
// event re-execution could not repeat (a system call, a signal's delivery,
// a return from the vDSO, whose clocks read memory the kernel updates), and
// every `every_branches` branches, so that reaching any point re-executes a
// bounded stretch. Each such event is also a barrier: no copy may run
// across it. A copy has one thread: while the program has several, one is
// copied only while every other one runs none of its code (stopped, or
// waiting in a futex or a sleep), and serves its thread's points only up to
// where another thread ran code again (others_run).
//
// Bounded by count and memory: past `max_count`, or past `memory_bytes` of
// the copies' proportional share of memory (measured after a quarter of
// the count has been added since, on at most kMeasuredCopies of them spread
// evenly from the oldest to the newest: reading a copy's /proc smaps_rollup
// walks its page tables, and reading all 1,024 every 256 checkpoints was a
// third of btstub's time recording Lua), they are thinned, not forgotten from the oldest: the one goes
// whose going merges the shortest stretch for its age, so the spacing
// grows with age and the whole history keeps checkpoints (a re-run far
// back costs more; one in the recent past as little as before). A
// checkpoint right after a barrier stays while another can go.
// Checkpoints older than the retained history are useless and go.
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decoder/history_visits.h"
#include "protocol/expected.h"
#include "stub/process/process_copy.h"

namespace stub::tracing {

using btstub::Expected;
using decoder::HistoryPoint;

struct CheckpointLimits {
  std::size_t max_count = 1024;
  // A re-run stops once at each visit of its target pc where the copy
  // cannot count them itself (~35 µs each here), and in a loop of one
  // branch per pass each branch is a visit: 700 bounds that first reverse
  // step into a hot loop to ~27 ms (docs/performance.md). A checkpoint
  // costs ~0.6 ms, as much as tracing ~50 branches under int3s: +~9% on
  // such a loop. Above 605 a program that makes a system call every 600
  // branches (checkpoints/syscalls benchmark) takes no extra ones.
  // --checkpoint-every sets it (the server picks 100,000 for translated
  // code, where a fork costs as much as ~10,000 branches).
  uint64_t every_branches = 700;
  // The periodic spacing grows with the thread's history: at least its
  // length over this (0: fixed). Past `max_count` the copies are thinned
  // to a spacing that grows with age anyway, so a long recording took
  // thousands of forks only to drop most of them: at 512 the last copies
  // of a 500-million-branch history are a million branches apart (a step
  // back re-runs a few milliseconds more), and the forks take a third as
  // long (docs/performance.md). --checkpoint-every fixes the spacing.
  uint64_t history_share = 512;
  // --checkpoint-memory: the copies' proportional share of memory (Pss),
  // measured now and then; past it the oldest go.
  uint64_t memory_bytes = uint64_t{1} << 30;
  // While the client is idle, stretches longer than this between two
  // checkpoints get more, each a copy of the one before re-run this many
  // branches on (stub/replay/past_state.h, fill_in): the recording then
  // takes its periodic ones far apart (each fork and the copy-on-write
  // faults after it cost the program milliseconds) and a step back still
  // re-runs at most this far once btstub had the time. 0: none.
  uint64_t fill_in_branches = 0;
};

class Checkpoints {
 public:
  using Limits = CheckpointLimits;
  explicit Checkpoints(Limits limits = {}) : limits_(limits) {}

  const Limits& limits() const { return limits_; }
  // Branches between periodic checkpoints of a thread whose history holds
  // `history_branches` (Limits::every_branches, history_share).
  uint64_t spacing(uint64_t history_branches) const {
    const uint64_t grown = limits_.history_share == 0 ? 0 : history_branches / limits_.history_share;
    return std::max(limits_.every_branches, grown);
  }

  void add(pid_t tid, HistoryPoint at, std::unique_ptr<process::ProcessCopy> copy);
  // A checkpoint made afterwards at `at`, between the thread's others (a
  // copy of an older one re-run to it): never past the count bound (false,
  // nothing added), and none goes for it but by the memory bound (false
  // when one went: filling in more would only thin again).
  bool fill_in(pid_t tid, HistoryPoint at, std::unique_ptr<process::ProcessCopy> copy);
  // An event at `at` (the instruction there) that re-execution cannot repeat.
  // `shared_digest`: the program's shared memory there, before the event
  // (over shared_ranges_due's ranges), when it was read.
  void barrier(pid_t tid, HistoryPoint at, std::optional<uint64_t> shared_digest = std::nullopt);
  // A system call at `at` that copies make again themselves
  // (process/repeated_call.h): no barrier, and no checkpoint owed.
  void repeated_call(pid_t tid, HistoryPoint at, const process::RepeatedCall& call);
  // The repeated calls of `tid` in [from, to), oldest first: what a copy
  // standing at `from` meets on its way to `to` (ProcessCopy::expect_calls).
  std::vector<process::RepeatedCall> calls(pid_t tid, HistoryPoint from, HistoryPoint to) const;
  uint64_t calls_repeatable() const { return calls_repeatable_; }

  // The shared mappings a barrier of `tid` now must digest: those of its
  // newest checkpoint when no barrier came since (a copy from there may
  // run up to it); null when none.
  const process::SharedRanges* shared_ranges_due(pid_t tid) const;
  // Where the stretch a copy from the checkpoint at `checkpoint` runs
  // through ends with the program's shared memory known: the first barrier
  // at or after it (its digest, if read) or the next checkpoint (its
  // copy's), whichever comes first; nullopt when neither follows (the
  // stretch reaches the present).
  struct SharedReference {
    HistoryPoint at;
    std::optional<uint64_t> digest;
  };
  std::optional<SharedReference> shared_reference(pid_t tid, HistoryPoint checkpoint) const;
  // The client wrote the program's memory while the thread stood at `at`
  // (before the instruction there ran): no copy older than `at` may run
  // to it or past it (it would miss the bytes written). A copy taken at
  // `at` after the write serves `at` and what follows.
  void client_write(pid_t tid, HistoryPoint at);

  // Thread `runner` is about to run code of the program: every checkpoint
  // of another thread taken since one last did (all others stood still
  // then) serves only the blocks that thread had run by now, which
  // `progress` gives as the sequence its history ends at (a lower bound;
  // nullopt: the thread has no history).
  void others_run(pid_t runner, const std::function<std::optional<uint64_t>(pid_t)>& progress);

  struct Usable {
    HistoryPoint at;
    process::ProcessCopy* copy = nullptr;
    // Another thread ran code once the thread had run the blocks before
    // this sequence: the copy stands for no point from there on.
    std::optional<uint64_t> valid_before;
    bool serves(HistoryPoint point) const { return !valid_before || point.sequence < *valid_before; }
  };
  // The newest checkpoint of `tid` at or before `at` with no barrier in
  // [checkpoint, at) that serves `at`; an error saying why there is none.
  Expected<Usable> usable_for(pid_t tid, HistoryPoint at) const;
  // Every checkpoint of `tid`, oldest first.
  std::vector<Usable> all(pid_t tid) const;
  // The oldest barrier of `tid` in [from, to), if any.
  std::optional<HistoryPoint> first_barrier(pid_t tid, HistoryPoint from, HistoryPoint to) const;
  // The oldest client write of `tid` in (from, to], if any.
  std::optional<HistoryPoint> first_write(pid_t tid, HistoryPoint from, HistoryPoint to) const;
  // The newest checkpoint of `tid`, if any.
  std::optional<HistoryPoint> newest(pid_t tid) const;

  // The history of `tid` now starts at block `first_sequence`.
  void drop_before(pid_t tid, uint64_t first_sequence);
  void forget(pid_t tid);
  void clear();

  // [begin, end) of the program's vDSO (empty when unknown): code a copy
  // must not run, since what it returns is not in the history.
  std::pair<uint64_t, uint64_t> vdso() const { return vdso_; }
  void set_vdso(std::pair<uint64_t, uint64_t> range) { vdso_ = range; }
  bool in_vdso(uint64_t addr) const { return addr >= vdso_.first && addr < vdso_.second; }
  // A return from the vDSO: its clocks read memory the kernel updates, so
  // a checkpoint is due after it.
  bool leaves_vdso(uint64_t from, uint64_t to) const { return in_vdso(from) && !in_vdso(to); }

  std::size_t count() const;
  // Checkpoints added since the tracer was made (the held ones and those
  // thinned or dropped since): what recording paid for.
  uint64_t taken() const { return taken_; }
  // Checkpoints fill_in() added.
  uint64_t filled_in() const { return filled_in_; }
  // The copies' proportional share of memory (Pss), measured now: exactly
  // up to kMeasuredCopies copies, else their mean on an even sample (the
  // oldest and the newest included) times the count.
  uint64_t memory_bytes() const;
  static constexpr std::size_t kMeasuredCopies = 32;
  // For monitor record status: how many, and their private memory.
  std::string status() const;

 private:
  struct Entry {
    HistoryPoint at;
    std::unique_ptr<process::ProcessCopy> copy;
    std::optional<uint64_t> valid_before;  // Usable::valid_before
  };
  struct Thread {
    std::deque<Entry> entries;         // oldest first
    std::deque<HistoryPoint> barriers; // oldest first
    std::deque<HistoryPoint> writes;   // the client's, oldest first
    std::deque<std::pair<HistoryPoint, process::RepeatedCall>> calls;  // repeated_call(), oldest first
    std::map<HistoryPoint, uint64_t> shared_digests;  // barrier(): those read
    // The oldest barrier in [from, to), if any: no copy may run across it.
    std::optional<HistoryPoint> first_barrier(HistoryPoint from, HistoryPoint to) const;
    // The oldest write in (from, to], if any: no copy from `from` may reach `to`.
    std::optional<HistoryPoint> first_write(HistoryPoint from, HistoryPoint to) const;
  };
  void drop_one();  // past a limit: thins the history's checkpoints
  // The copies memory_bytes() measures (an entry may hold none).
  std::vector<const process::ProcessCopy*> held_copies() const;

  void keep_within_memory();

  Limits limits_;
  std::size_t added_since_measured_ = 0;
  uint64_t taken_ = 0;
  uint64_t filled_in_ = 0;
  uint64_t calls_repeatable_ = 0;
  std::map<pid_t, Thread> threads_;
  std::pair<uint64_t, uint64_t> vdso_{0, 0};
};

// `samples` indices spread evenly over [0, count), the first and the last
// included; all of them when count <= samples.
std::vector<std::size_t> spread_sample(std::size_t count, std::size_t samples);

// The [vdso] mapping of a process, from /proc/PID/maps; {0, 0} if none.
std::pair<uint64_t, uint64_t> read_vdso_range(pid_t pid);

}  // namespace stub::tracing
