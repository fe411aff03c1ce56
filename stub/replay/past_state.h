#pragma once
// Registers and memory at a point of the recorded past, read from a copy of
// the program re-executed to that point: the newest checkpoint at or before
// it (stub/tracing/checkpoints.h) is forked and the copy runs natively to
// the point, with a breakpoint on its pc hit as many times as the history
// says that pc runs in between (decoder/history_visits.h). The copy is kept
// while the client looks around, and runs on when replay moves forward;
// going back forks again. A long re-run leaves a copy behind every
// kSnapshotHits visits (snapshots; where the copy counts the visits itself,
// kCountedLegs of them at most), so that stepping back through a hot loop
// re-runs from the nearest one, not from the checkpoint.
//
// Never a wrong value: a point with no usable checkpoint, or where the copy
// does not arrive exactly (another pc, or rsp/rbp other than the history
// says), has no copy, and the replay engine answers from the history alone.
// Why is kept for `monitor replay status`.
#include <sys/types.h>

#include <map>
#include <memory>
#include <set>
#include <optional>
#include <utility>
#include <string>
#include <tuple>

#include "decoder/block_trace.h"
#include "decoder/history_visits.h"
#include "decoder/stack_tracking.h"
#include "protocol/expected.h"
#include "stub/process/process_copy.h"
#include "stub/tracing/checkpoints.h"

namespace stub::replay {

using btstub::Expected;
using decoder::HistoryPoint;

class PastState {
 public:
  // `live_memory` reads the program as it is now (the newest stretch's
  // shared memory is checked against it).
  PastState(tracing::Checkpoints& checkpoints, process::MemoryRead live_memory)
      : checkpoints_(checkpoints), live_memory_(std::move(live_memory)) {}

  // A copy of the program standing at `at` of thread `tid`'s history
  // (`trace`, whose live block ends at `live_pc`), whose rsp and rbp must
  // equal `expected` where it says; an error saying why there is none.
  Expected<process::ProcessCopy*> at(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                                     HistoryPoint at, const decoder::StackState& expected);

  // Whether copies from `usable` stand for the program in the memory it
  // shares with other processes: a fork of it re-run to where the
  // program's shared memory is next known (a barrier, the next checkpoint,
  // the present) holds the same bytes there. Another process wrote there
  // meanwhile otherwise, which no re-run repeats. An error saying why not.
  Expected<void> check_shared(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                              const tracing::Checkpoints::Usable& usable);

  // While the client is idle: one checkpoint more in the newest stretch of
  // `tid`'s history longer than Checkpoints::Limits::fill_in_branches (S),
  // a copy of the checkpoint before it re-run S/2 to S branches on
  // (Checkpoints::fill_in), to the block start whose pc it passes fewest
  // times (decoder::HistoryStretch), where it stops fewer than
  // ProcessCopy::kCountingMinHits times or counts the runs itself: a turn
  // stays short. Only where a copy from there is sound anyway: no barrier
  // or client write in between, one thread, no shared memory, no mapped
  // file changed. A stretch that fails is not tried again. Returns whether it did
  // anything (false: nothing left to fill in, or the bounds are reached).
  bool fill_in(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc);

  // Kills the copy (replay ended).
  void clear();
  // One line for monitor replay status.
  std::string status() const;

 private:
  static constexpr uint64_t kSnapshotHits = 256;
  static constexpr uint64_t kCountedLegs = 16;
  static constexpr std::size_t kMaxSnapshots = 64;
  // The longest stretch run_copy reads into memory (16 bytes a block): the
  // translating tracer's checkpoints are 4 million branches apart (until a
  // history passes 2 billion or the memory bound thins them); a longer
  // stretch is passed over in place.
  static constexpr uint64_t kStretchBlocks = 6000000;

  Expected<void> run_copy(process::ProcessCopy& copy, pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                          HistoryPoint from, HistoryPoint to);
  // fill_in's copy of the checkpoint `from` and the point it was re-run
  // to, about `spacing` branches on.
  Expected<std::pair<HistoryPoint, std::unique_ptr<process::ProcessCopy>>> fill_in_copy(
      const tracing::Checkpoints::Usable& from, pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
      uint64_t spacing);

  tracing::Checkpoints& checkpoints_;
  process::MemoryRead live_memory_;
  // check_shared's answers by thread, checkpoint and where the stretch was
  // checked up to (the empty string: the same bytes); until clear().
  std::map<std::tuple<pid_t, HistoryPoint, HistoryPoint>, std::string> shared_checked_;
  struct Current {
    pid_t tid = 0;
    HistoryPoint checkpoint;
    HistoryPoint at;
    std::unique_ptr<process::ProcessCopy> copy;
  };
  std::optional<Current> current_;
  // By thread and point; valid while the program stays stopped.
  std::map<std::pair<pid_t, HistoryPoint>, std::unique_ptr<process::ProcessCopy>> snapshots_;
  std::string problem_;
  // Checkpoints whose stretch fill_in could not fill, by thread; kept
  // across clear() (a checkpoint's point is never reached again).
  std::set<std::pair<pid_t, HistoryPoint>> unfillable_;
  // The newest run_copy: the visits of its pc it ran through, and how
  // often the copy stopped on the way (what the run cost).
  struct LastRun {
    uint64_t visits = 0;
    uint64_t stops = 0;
  };
  LastRun last_run_;
};

}  // namespace stub::replay
