#pragma once
// Watchpoints in the recorded past: which instruction of a stretch of the
// history touched a watched region (the client's Z2/Z4, as the debug
// registers hold them). Each stretch between checkpoints is re-run in a
// copy of the program with the watches armed: natively first, counting
// hits (most stretches have none). Where some fired, the stretch is halved
// (a copy run natively to its middle block, then the later half re-run
// with the watches to count its hits) down to the half that holds the hit
// sought, until at most kStepBlocks blocks remain, which are run one
// instruction at a time to tell which instruction it was: stepping costs a
// stop per instruction, a halving a few native runs. A system call's
// writes (the copy stops before it) show as a difference between the copy
// there and the checkpoint taken right after the call.
//
// A stretch that cannot be re-run (no checkpoint, a signal delivery or a
// vDSO call inside) is an error, never a silent "no hit"; but only once
// the search gets there: going back, a hit in the stretches after it is
// the answer (a fork or a vfork anywhere before it, whose checkpoint
// comes later than right after the call, no longer fails every search).
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/history_visits.h"
#include "protocol/expected.h"
#include "stub/process/debug_registers.h"
#include "stub/tracing/checkpoints.h"

namespace stub::replay {

using btstub::Expected;
using decoder::HistoryPoint;

struct PastWatchHit {
  HistoryPoint at;          // the instruction that touched the watch
  process::DebugHit hit;    // which watch (address, kind)
};

class PastWatch {
 public:
  // Why re-runs from a checkpoint do not stand for the program (another
  // process wrote memory it shares: PastState::check_shared), or nullopt.
  using StartCheck = std::function<std::optional<std::string>(const tracing::Checkpoints::Usable&)>;
  PastWatch(tracing::Checkpoints& checkpoints, const decoder::BlockTrace& trace, uint64_t live_pc, pid_t tid,
            const process::DebugRegisterState& watches, StartCheck start_check = {})
      : checkpoints_(checkpoints),
        trace_(trace),
        live_pc_(live_pc),
        tid_(tid),
        watches_(watches.watches_only()),
        start_check_(std::move(start_check)) {}

  // The newest / oldest instruction in [low, high) that touched a watch.
  Expected<std::optional<PastWatchHit>> last_in(HistoryPoint low, HistoryPoint high);
  Expected<std::optional<PastWatchHit>> first_in(HistoryPoint low, HistoryPoint high);

  // What the searches so far cost (`monitor replay status`).
  struct Effort {
    uint64_t native_runs = 0;   // copies run natively with the watches armed
    uint64_t halvings = 0;      // stretches halved where watches fired
    uint64_t stepped = 0;       // instructions run one at a time
  };
  const Effort& effort() const { return effort_; }

 private:
  struct Stretch {
    tracing::Checkpoints::Usable start;
    HistoryPoint end;         // exclusive
    bool ends_at_call = false;  // `end` is a system call, re-run up to it
    std::optional<tracing::Checkpoints::Usable> after_call;  // the checkpoint just after it
    // Why [start.at, end) cannot be searched (then `start` has no copy):
    // a search that reaches it fails there, one that finds its hit before
    // (newer, going back; older, going forward) needs none of it.
    std::optional<std::string> unsearchable;
  };
  Expected<std::vector<Stretch>> stretches(HistoryPoint low, HistoryPoint high);
  // Which hit a search needs: the newest or the oldest in [low, high).
  enum class Sought { Newest, Oldest };
  // Hits in one stretch, oldest first, limited to [low, high); the one
  // sought is among them if the stretch has it (others may be left out).
  Expected<std::vector<PastWatchHit>> hits_in(const Stretch& stretch, HistoryPoint low, HistoryPoint high,
                                              Sought sought);
  // The same for the run from `from` (where `base` stands) to `to`, in
  // which the watches fired `fired` times.
  Expected<std::vector<PastWatchHit>> locate(process::ProcessCopy& base, HistoryPoint from, HistoryPoint to,
                                             uint64_t fired, HistoryPoint low, HistoryPoint high, Sought sought);
  // The copy at `from` forked and run with the watches armed to `to`: the
  // copy there, and the hits on the way.
  struct CountedRun {
    std::unique_ptr<process::ProcessCopy> copy;
    uint64_t fired = 0;
  };
  Expected<CountedRun> counted_run(process::ProcessCopy& base, HistoryPoint from, HistoryPoint to, bool armed);

  tracing::Checkpoints& checkpoints_;
  const decoder::BlockTrace& trace_;
  uint64_t live_pc_;
  pid_t tid_;
  process::DebugRegisterState watches_;  // the watches alone, no execute slots
  StartCheck start_check_;
  Effort effort_;
};

}  // namespace stub::replay
