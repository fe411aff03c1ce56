#pragma once
// Summaries of runs of a thread's history for the stack-slot walk behind
// ReplayCursor::memory (decoder/replay_memory.cc). For each run of
// blocks_per_run() blocks: the bytes its calls and pushes wrote, the
// highest rsp at an instruction that may have stored where the history
// cannot tell, and whether a walk can pass it at all. A read of a slot that
// no run near it touched then passes whole runs instead of every
// instruction, so reading a slot written long ago (or never, like main's
// return address) costs about the same at 100 million branches as at a
// thousand, once the runs were summed up.
//
// Kept across cursors, from one stop to the next: the blocks of a run
// never change once recorded (sequence numbers are never reused within a
// trace), and the code is read as it is now, as the cursor reads it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "decoder/block_trace.h"

namespace decoder {

struct RunSummary {
  bool passable = false;             // every block decodes exactly and every rsp is known
  uint64_t write_low = UINT64_MAX;   // the lowest byte a call or push of the run wrote
  uint64_t write_high = 0;           // the highest
  uint64_t unseen_rsp_max = 0;       // the highest rsp at an instruction that may store unseen
};

class HistorySummaries {
 public:
  explicit HistorySummaries(uint64_t blocks_per_run = 4096) : blocks_per_run_(blocks_per_run ? blocks_per_run : 1) {}

  uint64_t blocks_per_run() const { return blocks_per_run_; }
  // Forgets what was summed up of another trace (or of runs dropped from this one).
  void use_for(const BlockTrace& trace);
  const RunSummary* find(uint64_t run) const;
  std::size_t size() const { return runs_.size(); }
  const RunSummary& put(uint64_t run, const RunSummary& summary);
  // Every run below this one is summed up or dropped: a sweep
  // (ReplayCursor::sum_up_runs) finished down to there, so the next one
  // goes no further.
  uint64_t complete_below() const { return complete_below_; }
  void set_complete_below(uint64_t run) { complete_below_ = std::max(complete_below_, run); }
  // The whole runs of a trace holding branches [first_sequence,
  // end_sequence) are [first_whole_run, end_whole_run): run r holds blocks
  // [r*n, (r+1)*n), block k ends at branch k, so a run is whole once
  // branch (r+1)*n-1 is recorded; a run partly dropped is not whole.
  uint64_t first_whole_run(uint64_t first_sequence) const {
    return (first_sequence + blocks_per_run_ - 1) / blocks_per_run_;
  }
  uint64_t end_whole_run(uint64_t end_sequence) const { return end_sequence / blocks_per_run_; }
  bool all_summed_up(uint64_t end_sequence) const { return complete_below_ >= end_whole_run(end_sequence); }

 private:
  uint64_t blocks_per_run_;
  uint64_t complete_below_ = 0;
  uint64_t trace_id_ = 0;
  std::unordered_map<uint64_t, RunSummary> runs_;
};

}  // namespace decoder
