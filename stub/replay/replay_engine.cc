#include "stub/replay/replay_engine.h"
#include "protocol/hex_text.h"
#include "stub/process/proc_maps.h"
#include "stub/tracing/map_changes.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "protocol/amd64_registers.h"

namespace stub::replay {
using process::MemoryMapping;
using process::parse_maps;
using process::read_maps;

namespace {

using btstub::ErrorCode;
using btstub::make_error;
using decoder::ReplayStop;

using protocol::hex;

// Code, or a file's bytes: anonymous data ([vvar], the heap, a page the
// program mprotected) may have changed before it became read-only.
bool may_be_constant(const MemoryMapping& m) {
  return m.executable || (m.inode != 0 && !m.name.empty() && m.name.front() != '[');
}

std::optional<std::pair<uint64_t, uint64_t>> range_holding(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                                                           uint64_t addr) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::pair{addr, ~uint64_t{0}});
  if (it == ranges.begin()) return std::nullopt;
  --it;
  if (addr >= it->first && addr < it->second) return *it;
  return std::nullopt;
}

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> read_only_ranges(const std::vector<MemoryMapping>& maps) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const MemoryMapping& m : maps) {
    // A shared mapping the program cannot write may still change: another
    // process, or the program through another mapping, writes it.
    if (m.readable && !m.writable && !m.shared && may_be_constant(m)) out.emplace_back(m.begin, m.end);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> parse_read_only_maps(const std::string& text) {
  return read_only_ranges(parse_maps(text));
}

void ProcMaps::refresh() {
  std::vector<MemoryMapping> maps = read_maps(pid_);
  // A file's data changed since the program started: its pages (the
  // file's cache) show it as it is now, not as a past point saw it.
  const std::optional<int64_t> started = process::process_start_realtime_ns(pid_);
  const std::set<uint64_t> shared = process::shared_writable_files(maps);
  std::erase_if(maps, [&](const MemoryMapping& m) {
    return !m.executable && (!started || shared.count(m.inode) != 0 ||
                             process::mapped_file_changed_after(pid_, m, *started));
  });
  ranges_ = read_only_ranges(maps);
  code_.clear();
  for (const MemoryMapping& m : maps) {
    if (m.executable) code_.emplace_back(m.begin, m.end);
  }
  file_pages_.clear();
}

std::optional<std::pair<uint64_t, uint64_t>> ProcMaps::read_only_range(uint64_t addr) {
  auto range = range_holding(ranges_, addr);
  if (!range || range_holding(code_, addr)) return range;
  // A file's data: only the pages that still hold its bytes, each asked once
  // a replay (the program does not run meanwhile).
  const uint64_t page = addr & ~uint64_t{4095};
  auto [known, fresh] = file_pages_.try_emplace(page, false);
  if (fresh) known->second = process::page_holds_file_bytes(pid_, page).value_or(false);
  if (!known->second) return std::nullopt;
  return std::pair{std::max(range->first, page), std::min(range->second, page + 4096)};
}

ReplayEngine::ReplayEngine(Process& process, const TraceBackend& backend, std::unique_ptr<MappingInfo> maps)
    : process_(process),
      backend_(backend),
      maps_(std::move(maps)),
      code_(std::make_unique<process::ProcessCode>(process)) {
  if (tracing::Checkpoints* checkpoints = backend_.checkpoints()) {
    past_ = std::make_unique<PastState>(
        *checkpoints, [&process](uint64_t addr, std::size_t len) { return process.read_memory(addr, len); });
  }
}

process::ProcessCopy* ReplayEngine::copy_at(pid_t tid, decoder::ReplayCursor& cursor) {
  if (!past_) return nullptr;
  const decoder::BlockTrace* trace = backend_.trace(tid);
  if (trace == nullptr) return nullptr;
  const decoder::HistoryPoint at{cursor.position().sequence, cursor.pc()};
  auto copy = past_->at(tid, *trace, cursor.live_pc(), at, cursor.stack());
  return copy ? *copy : nullptr;
}

ReplayEngine::~ReplayEngine() = default;

bool ReplayEngine::replaying(pid_t tid) const { return cursors_.count(tid) != 0; }

// The thread's cursor, created at its live end on first use; nullptr when
// the thread has no history.
Expected<decoder::ReplayCursor*> ReplayEngine::cursor_for(pid_t tid) {
  auto it = cursors_.find(tid);
  if (it != cursors_.end()) return it->second.get();
  const decoder::BlockTrace* trace = backend_.trace(tid);
  if (trace == nullptr) return static_cast<decoder::ReplayCursor*>(nullptr);
  if (cursors_.empty() && maps_) maps_->refresh();
  auto cursor = make_cursor(tid, *trace);
  if (!cursor) return cursor.error();
  return cursors_.emplace(tid, std::move(*cursor)).first->second.get();
}

// A cursor at the thread's live end, sharing its summaries.
Expected<std::unique_ptr<decoder::ReplayCursor>> ReplayEngine::make_cursor(pid_t tid,
                                                                           const decoder::BlockTrace& trace) {
  if (!decoder_) {
    auto created = decoder::InstructionDecoder::create();
    if (!created) return created.error();
    decoder_.emplace(std::move(*created));
    cache_ = std::make_unique<decoder::BlockCache>(*decoder_, *code_);
  }
  auto regs = process_.read_registers(tid);
  if (!regs) return regs.error();
  using protocol::Amd64Reg;
  decoder::LiveState live;
  live.pc = regs->get_u64(Amd64Reg::rip);
  if (regs->available(static_cast<unsigned>(Amd64Reg::rsp))) live.stack.rsp = regs->get_u64(Amd64Reg::rsp);
  if (regs->available(static_cast<unsigned>(Amd64Reg::rbp))) live.stack.rbp = regs->get_u64(Amd64Reg::rbp);
  decoder::HistorySummaries& summaries = summaries_[tid];
  summaries.use_for(trace);
  return std::make_unique<decoder::ReplayCursor>(trace, live, *cache_, &summaries);
}

bool ReplayEngine::sum_up_histories(const std::set<pid_t>& not_ours, std::size_t most_runs) {
  if (any_replaying()) return false;
  const std::vector<pid_t> threads = process_.threads();
  // One thread with checkpoints: its past is read from copies.
  if (past_ && threads.size() <= 1) return false;
  for (pid_t tid : threads) {
    if (not_ours.count(tid) != 0) continue;
    const decoder::BlockTrace* trace = backend_.trace(tid);
    // Without stack snapshots no run can be passed: nothing to sum up.
    if (trace == nullptr || !trace->has_stacks()) continue;
    decoder::HistorySummaries& summaries = summaries_[tid];
    summaries.use_for(*trace);
    if (summaries.all_summed_up(trace->end_sequence())) continue;  // nothing new
    auto cursor = make_cursor(tid, *trace);
    if (!cursor) continue;  // a thread going away: its next stop tells
    read_code_ = true;
    const std::size_t made = (*cursor)->sum_up_runs(most_runs);
    if (!(*cursor)->all_summed_up()) return true;
    most_runs -= made;
  }
  return false;
}

bool ReplayEngine::fill_in_checkpoints() {
  if (!past_) return false;
  for (pid_t tid : process_.threads()) {
    const decoder::BlockTrace* trace = backend_.trace(tid);
    if (trace == nullptr) continue;
    auto regs = process_.read_registers(tid);
    if (!regs) continue;  // a thread going away: its next stop tells
    if (past_->fill_in(tid, *trace, regs->get_u64(protocol::Amd64Reg::rip))) return true;
  }
  return false;
}

// The program runs on after this stop: nothing read of it may stay.
void ReplayEngine::drop_code_read() {
  if (!read_code_) return;
  read_code_ = false;
  if (cache_) cache_->clear();
  code_->clear();
}

// A cursor back at the live end is dropped: the thread is live again.
Expected<ReplayStop> ReplayEngine::finish(pid_t tid, ReplayStop stop) {
  auto it = cursors_.find(tid);
  if (it != cursors_.end() && it->second->at_live_end()) {
    cursors_.erase(it);
    if (cursors_.empty()) go_live();
  }
  return stop;
}

namespace {

decoder::HistoryPoint here(decoder::ReplayCursor& cursor) { return {cursor.position().sequence, cursor.pc()}; }

// Moves the cursor onto `target`, a point of its history.
bool seek(decoder::ReplayCursor& cursor, decoder::HistoryPoint target) {
  const std::vector<uint64_t> stop_at{target.pc};
  for (;;) {
    const decoder::HistoryPoint now = here(cursor);
    if (now == target) return true;
    const ReplayStop stop = now < target ? cursor.continue_forward(stop_at) : cursor.continue_back(stop_at);
    if (stop == ReplayStop::Signal) continue;  // a signal's point on the way
    if (stop != ReplayStop::Breakpoint && here(cursor) != target) return false;
  }
}

ReplayStop back_one(decoder::ReplayCursor& c, const std::vector<uint64_t>&) { return c.step_back(); }
ReplayStop forward_one(decoder::ReplayCursor& c, const std::vector<uint64_t>&) { return c.step_forward(); }

}  // namespace

// Going back over [to, from) the newest instruction that touched a watch is
// where the move stops (its effect undone); going forward over [from, to)
// the oldest, and the move stops just after it. A stretch that cannot be
// re-run is an error and the cursor stays where it was: a watchpoint is
// never passed unseen.
Expected<ReplayStop> ReplayEngine::move_watching(pid_t tid, decoder::ReplayCursor& cursor, bool back, Move move,
                                                 const std::vector<uint64_t>& breakpoints) {
  const process::DebugRegisterState watches = process_.hw_points().watches_only();
  const decoder::BlockTrace* trace = backend_.trace(tid);
  if (watches.empty() || trace == nullptr) return finish(tid, move(cursor, breakpoints));
  // Without copies nothing tells where a watched byte changed: a move
  // would pass every change unseen.
  if (!past_) {
    return make_error(ErrorCode::NotSupported,
                      "Cannot watch in the recorded past: btstub keeps no copies of the program "
                      "(--checkpoint-memory=0) to find where a watched value changed; delete the watchpoint to move");
  }
  const decoder::HistoryPoint from = here(cursor);
  const ReplayStop stop = move(cursor, breakpoints);
  const decoder::HistoryPoint to = here(cursor);
  const uint64_t live_pc = cursor.live_pc();
  PastWatch search(*backend_.checkpoints(), *trace, live_pc, tid, watches,
                   [&](const tracing::Checkpoints::Usable& start) -> std::optional<std::string> {
                     auto same = past_->check_shared(tid, *trace, live_pc, start);
                     if (same) return std::nullopt;
                     return same.error().message;
                   });
  auto hit = back ? search.last_in(to, from) : search.first_in(from, to);
  last_search_ = search.effort();
  if (!hit) {
    seek(cursor, from);
    (void)finish(tid, ReplayStop::Moved);
    return hit.error();
  }
  if (!*hit) return finish(tid, stop);
  if (!seek(cursor, (*hit)->at)) return make_error(ErrorCode::Internal, "Lost the watchpoint's place in the history");
  if (!back) (void)cursor.step_forward();
  watch_hit_ = (*hit)->hit;
  // The watch's stop, also where the write was the history's last
  // instruction and the thread now stands at its live end: reported as
  // the end of the history, gdb said "No more reverse-execution history"
  // and never showed the change (and later an old value that was stale).
  return finish(tid, ReplayStop::Moved);
}

Expected<ReplayStop> ReplayEngine::step_back(pid_t tid) {
  watch_hit_.reset();
  auto cursor = cursor_for(tid);
  if (!cursor) return cursor.error();
  if (*cursor == nullptr) return ReplayStop::HistoryBegin;
  return move_watching(tid, **cursor, true, back_one, {});
}

Expected<ReplayStop> ReplayEngine::step_forward(pid_t tid) {
  watch_hit_.reset();
  auto it = cursors_.find(tid);
  if (it == cursors_.end()) return ReplayStop::HistoryEnd;
  return move_watching(tid, *it->second, false, forward_one, {});
}

Expected<ReplayStop> ReplayEngine::continue_back(pid_t tid, std::vector<uint64_t> breakpoints) {
  watch_hit_.reset();
  auto cursor = cursor_for(tid);
  if (!cursor) return cursor.error();
  if (*cursor == nullptr) return ReplayStop::HistoryBegin;
  std::sort(breakpoints.begin(), breakpoints.end());
  return move_watching(tid, **cursor, true, [this](decoder::ReplayCursor& c, const std::vector<uint64_t>& b) {
    return c.continue_back(b, scan_turn_);
  }, breakpoints);
}

Expected<ReplayStop> ReplayEngine::continue_forward(pid_t tid, std::vector<uint64_t> breakpoints) {
  watch_hit_.reset();
  auto it = cursors_.find(tid);
  if (it == cursors_.end()) return ReplayStop::HistoryEnd;
  std::sort(breakpoints.begin(), breakpoints.end());
  return move_watching(tid, *it->second, false, [this](decoder::ReplayCursor& c, const std::vector<uint64_t>& b) {
    return c.continue_forward(b, scan_turn_);
  }, breakpoints);
}

int ReplayEngine::signal(pid_t tid) const {
  auto it = cursors_.find(tid);
  return it == cursors_.end() ? 0 : it->second->signal();
}

Expected<protocol::RegisterFile> ReplayEngine::registers(pid_t tid) {
  auto it = cursors_.find(tid);
  if (it == cursors_.end()) return process_.read_registers(tid);
  if (process::ProcessCopy* copy = copy_at(tid, *it->second)) {
    if (auto regs = copy->registers()) return regs;
  }
  using protocol::Amd64Reg;
  protocol::RegisterFile regs;
  regs.set_all_available(false);
  regs.set_u64(Amd64Reg::rip, it->second->pc());
  const decoder::StackState stack = it->second->stack();
  if (stack.rsp) regs.set_u64(Amd64Reg::rsp, *stack.rsp);
  if (stack.rbp) regs.set_u64(Amd64Reg::rbp, *stack.rbp);
  return regs;
}

// Known bytes from the history; the rest from the live program only inside
// read-only mappings. The readable prefix is returned, as for live reads.
Expected<std::vector<uint8_t>> ReplayEngine::read_memory(pid_t tid, uint64_t addr, std::size_t len) {
  auto it = cursors_.find(tid);
  if (it == cursors_.end()) return process_.read_memory(addr, len);
  if (process::ProcessCopy* copy = copy_at(tid, *it->second)) return copy->read_memory(addr, len);
  const auto known = it->second->memory(addr, len);
  // Mapped or changed since this point: the present's bytes may not be its.
  std::vector<std::pair<uint64_t, uint64_t>> changed;
  if (const tracing::MapChanges* changes = backend_.map_changes()) {
    const uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
    changed = changes->changed_after(tid, it->second->position().sequence, addr, end);
  }
  auto next_changed = changed.begin();
  std::vector<uint8_t> out;
  out.reserve(len);
  std::optional<std::vector<uint8_t>> live;
  for (std::size_t i = 0; i < len; ++i) {
    if (known[i]) {
      out.push_back(*known[i]);
      continue;
    }
    while (next_changed != changed.end() && next_changed->second <= addr + i) ++next_changed;
    if (next_changed != changed.end() && next_changed->first <= addr + i) break;
    if (!maps_ || !maps_->read_only_range(addr + i)) break;
    if (!live) {
      auto bytes = process_.read_memory(addr, len);
      live = bytes ? std::move(*bytes) : std::vector<uint8_t>{};
    }
    if (i >= live->size()) break;
    out.push_back((*live)[i]);
  }
  if (out.empty()) {
    return make_error(ErrorCode::MemoryFault, "Cannot access memory at address " + hex(addr) +
                                                  " in the recorded past (only return addresses, saved "
                                                  "frame pointers and read-only memory are known)");
  }
  return out;
}

Expected<void> ReplayEngine::check_writable(pid_t tid) const {
  if (!replaying(tid)) return {};
  return make_error(ErrorCode::NotSupported,
                    "Cannot change registers or memory while replaying the recorded past; "
                    "go forward to the live end first");
}

// What is summed up ahead of reads far back, per thread (its runs whole
// and not dropped).
std::string ReplayEngine::summaries_status() {
  std::string out;
  for (const auto& [tid, summaries] : summaries_) {
    const decoder::BlockTrace* trace = backend_.trace(tid);
    if (trace == nullptr || !trace->has_stacks()) continue;
    const uint64_t first = summaries.first_whole_run(trace->first_sequence());
    const uint64_t whole = summaries.end_whole_run(trace->end_sequence());
    const uint64_t runs = whole > first ? whole - first : 0;
    const uint64_t summed = std::min<uint64_t>(summaries.size(), runs);
    out += "Thread " + std::to_string(tid) + ": history summed up for reads far back: " + std::to_string(summed) +
           " of " + std::to_string(runs) + " runs of " + std::to_string(summaries.blocks_per_run()) + " blocks\n";
  }
  return out;
}

std::string ReplayEngine::status(uint64_t counted_branches) {
  if (cursors_.empty()) return "Not replaying: all threads are live.\n" + summaries_status();
  std::string out;
  for (auto& [tid, cursor] : cursors_) {
    const auto branches = cursor->branch_number();
    if (branches.total > counted_branches) {
      out += "Thread " + std::to_string(tid) + ": replaying at branch " + std::to_string(branches.index + 1) +
             " of " + std::to_string(branches.total + 1) + " (pc " + hex(cursor->pc()) +
             "; instructions are counted in histories of up to " + std::to_string(counted_branches) +
             " branches)\n";
      continue;
    }
    const auto count = cursor->instruction_number();
    out += "Thread " + std::to_string(tid) + ": replaying at instruction " + std::to_string(count.index + 1) +
           " of " + std::to_string(count.total) + " (pc " + hex(cursor->pc()) + ")\n";
  }
  if (past_) out += past_->status();
  out += summaries_status();
  if (last_search_) {
    out += "Last watch search: " + std::to_string(last_search_->native_runs) + " native re-runs with the watches, " +
           std::to_string(last_search_->halvings) + " halvings, " + std::to_string(last_search_->stepped) +
           " instructions stepped.\n";
  }
  return out;
}

void ReplayEngine::go_live() {
  cursors_.clear();
  last_search_.reset();
  if (past_) past_->clear();
  if (cache_) cache_->clear();
  code_->clear();
}

}  // namespace stub::replay
