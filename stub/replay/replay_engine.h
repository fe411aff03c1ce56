#pragma once
// Reverse execution answered from the recorded branch trace: per thread a
// replay cursor (decoder/replay_history.h) over the thread's BlockTrace,
// with code bytes read from the stopped program. While a thread replays,
// its registers and memory come from a copy of the program re-run to the
// point (stub/replay/past_state.h) where the backend keeps checkpoints;
// where no copy can stand there, its registers are rip, rsp and rbp as the
// history determines them (all others unavailable) and its memory is what
// the history determines, or the live bytes of read-only mappings, or an
// error: never a wrong value.
//
// The program must stay stopped while any thread replays (its traces and
// code must not change); call go_live() before resuming it.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/instruction_decoder.h"
#include "decoder/replay_history.h"
#include "protocol/expected.h"
#include <unordered_map>

#include "protocol/register_file.h"
#include "stub/process/process.h"
#include "stub/process/process_code.h"
#include "stub/replay/past_state.h"
#include "stub/replay/past_watch.h"
#include "stub/tracing/trace_backend.h"

namespace stub::replay {

using btstub::Expected;
using process::Process;
using tracing::TraceBackend;

// Which addresses lie in read-only memory whose bytes cannot have changed
// since the past; injected so tests can fake /proc/PID/maps.
class MappingInfo {
 public:
  virtual ~MappingInfo() = default;
  // [begin, end) of the read-only mapping holding `addr`, if any.
  virtual std::optional<std::pair<uint64_t, uint64_t>> read_only_range(uint64_t addr) = 0;
  // Called when a replay starts: mappings may have changed since.
  virtual void refresh() {}
};

// MappingInfo from /proc/PID/maps: readable, not writable, private
// mappings of code, and of files where the page still holds the file's
// bytes. Read-only now is not read-only in the past: anonymous memory
// (and a file page the program wrote, as ld.so does its RELRO) may have
// been written before an mprotect took the write away, or mapped only
// since; a file page never written holds what it held since it was mapped,
// unless the file changed since the program started.
class ProcMaps final : public MappingInfo {
 public:
  explicit ProcMaps(pid_t pid) : pid_(pid) {}
  std::optional<std::pair<uint64_t, uint64_t>> read_only_range(uint64_t addr) override;
  void refresh() override;

 private:
  pid_t pid_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // sorted
  std::vector<std::pair<uint64_t, uint64_t>> code_;     // sorted: executable ones
  std::unordered_map<uint64_t, bool> file_pages_;       // page -> holds the file's bytes (until refresh)
};

// Parses maps text into sorted read-only ranges (exposed for tests).
std::vector<std::pair<uint64_t, uint64_t>> parse_read_only_maps(const std::string& text);

class ReplayEngine {
 public:
  ReplayEngine(Process& process, const TraceBackend& backend, std::unique_ptr<MappingInfo> maps);
  ~ReplayEngine();

  // True while `tid` is at a position in its past (not at the live end).
  bool replaying(pid_t tid) const;
  bool any_replaying() const { return !cursors_.empty(); }

  // Moves of one thread. A thread without history stops at HistoryBegin at
  // once; reaching the live end (HistoryEnd, or a breakpoint there) ends its
  // replay. `breakpoints` need not be sorted.
  Expected<decoder::ReplayStop> step_back(pid_t tid);
  Expected<decoder::ReplayStop> step_forward(pid_t tid);
  Expected<decoder::ReplayStop> continue_back(pid_t tid, std::vector<uint64_t> breakpoints);
  Expected<decoder::ReplayStop> continue_forward(pid_t tid, std::vector<uint64_t> breakpoints);
  // What continues call as they scan a long history (decoder::ScanTurn):
  // the server's progress report and interrupt check. Unset: none.
  void set_scan_turn(decoder::ScanTurn turn) { scan_turn_ = std::move(turn); }

  // The watch that stopped the last move, if one did: with checkpoints, the
  // moves stop where an inserted watchpoint (Process::hw_points) fires in
  // the past: going back, at the instruction that touched it; going
  // forward, just after it.
  std::optional<process::DebugHit> take_watch_hit() { return std::exchange(watch_hit_, std::nullopt); }

  // The signal delivered where `tid` replays (a move that stopped with
  // ReplayStop::Signal), or 0.
  int signal(pid_t tid) const;

  // The thread's registers / memory: in the past while replaying, else live.
  Expected<protocol::RegisterFile> registers(pid_t tid);
  Expected<std::vector<uint8_t>> read_memory(pid_t tid, uint64_t addr, std::size_t len);
  // An error while `tid` replays (writes would change the past), else ok.
  Expected<void> check_writable(pid_t tid) const;

  // For `monitor replay status`: one line per replaying thread. The
  // instruction number decodes the whole history: told for histories of up
  // to `counted_branches` branches; past that, the branch number (at once:
  // gdb gives up on a reply after 2 seconds).
  static constexpr uint64_t kCountedBranches = 100'000;
  std::string status(uint64_t counted_branches = kCountedBranches);
  std::string summaries_status();

  // Every thread back at its live end; caches dropped.
  void go_live();

  // At a stop of the live program: sums up at most `most_runs` of the
  // runs of history not summed up yet (decoder/history_summaries.h) for
  // every thread whose past is read from its history alone (the program
  // has several threads, or no checkpoints), except `not_ours` (traces the
  // client replays itself). The first read far back in a long history then
  // costs what later ones do. Returns whether runs are left (only when
  // `most_runs` ran out). The code read meanwhile stays cached until
  // drop_code_read(): call it before the program runs on.
  bool sum_up_histories(const std::set<pid_t>& not_ours, std::size_t most_runs = SIZE_MAX);
  void drop_code_read();

  // While the program is stopped and the client idle: one more checkpoint
  // where the recording took them sparsely (PastState::fill_in), for the
  // first thread that has a stretch left to fill. Returns whether it did
  // anything (false: nothing left, or no checkpoints).
  bool fill_in_checkpoints();

 private:
  Expected<decoder::ReplayCursor*> cursor_for(pid_t tid);
  Expected<std::unique_ptr<decoder::ReplayCursor>> make_cursor(pid_t tid, const decoder::BlockTrace& trace);
  // The copy standing where `tid` replays, if one can.
  process::ProcessCopy* copy_at(pid_t tid, decoder::ReplayCursor& cursor);
  Expected<decoder::ReplayStop> finish(pid_t tid, decoder::ReplayStop stop);
  // A move, then the watch search over the stretch it crossed (oldest
  // first: [from, to) going back, [to, from)... see replay_engine.cc).
  using Move = std::function<decoder::ReplayStop(decoder::ReplayCursor&, const std::vector<uint64_t>&)>;
  Expected<decoder::ReplayStop> move_watching(pid_t tid, decoder::ReplayCursor& cursor, bool back, Move move,
                                              const std::vector<uint64_t>& breakpoints);

  Process& process_;
  const TraceBackend& backend_;
  std::unique_ptr<MappingInfo> maps_;
  std::unique_ptr<process::ProcessCode> code_;
  std::optional<decoder::InstructionDecoder> decoder_;
  std::unique_ptr<decoder::BlockCache> cache_;
  std::map<pid_t, std::unique_ptr<decoder::ReplayCursor>> cursors_;
  // Per thread, kept across stops (unlike cursors_ and cache_): what the
  // cursors' stack reads learned of runs of the history.
  std::map<pid_t, decoder::HistorySummaries> summaries_;
  bool read_code_ = false;  // sum_up_histories read code since drop_code_read
  std::unique_ptr<PastState> past_;  // with the backend's checkpoints
  std::optional<process::DebugHit> watch_hit_;
  std::optional<PastWatch::Effort> last_search_;  // of the last move with watches in the past
  decoder::ScanTurn scan_turn_;
};

}  // namespace stub::replay
