#include "stub/tracing/checkpoints.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

namespace stub::tracing {

using btstub::ErrorCode;
using btstub::make_error;

void Checkpoints::add(pid_t tid, HistoryPoint at, std::unique_ptr<process::ProcessCopy> copy) {
  Thread& thread = threads_[tid];
  // A point is reached once: a newer checkpoint never stands before an older one.
  while (!thread.entries.empty() && !(thread.entries.back().at < at)) thread.entries.pop_back();
  thread.entries.push_back(Entry{at, std::move(copy), std::nullopt});
  ++taken_;
  while (count() > limits_.max_count) drop_one();
  if (++added_since_measured_ >= std::max<std::size_t>(8, count() / 4)) keep_within_memory();
}

bool Checkpoints::fill_in(pid_t tid, HistoryPoint at, std::unique_ptr<process::ProcessCopy> copy) {
  if (count() >= limits_.max_count) return false;
  Thread& thread = threads_[tid];
  auto after = std::upper_bound(thread.entries.begin(), thread.entries.end(), at,
                                [](const HistoryPoint& p, const Entry& e) { return p < e.at; });
  if (after != thread.entries.begin() && std::prev(after)->at == at) return false;
  thread.entries.insert(after, Entry{at, std::move(copy), std::nullopt});
  ++filled_in_;
  const std::size_t held = count();
  if (++added_since_measured_ >= std::max<std::size_t>(8, held / 4)) keep_within_memory();
  return count() == held;
}

std::optional<HistoryPoint> Checkpoints::Thread::first_barrier(HistoryPoint from, HistoryPoint to) const {
  auto barrier = std::lower_bound(barriers.begin(), barriers.end(), from);
  if (barrier == barriers.end() || !(*barrier < to)) return std::nullopt;
  return *barrier;
}

std::optional<HistoryPoint> Checkpoints::Thread::first_write(HistoryPoint from, HistoryPoint to) const {
  auto write = std::upper_bound(writes.begin(), writes.end(), from);
  if (write == writes.end() || to < *write) return std::nullopt;
  return *write;
}

void Checkpoints::client_write(pid_t tid, HistoryPoint at) {
  Thread& thread = threads_[tid];
  if (!thread.writes.empty() && at < thread.writes.back()) thread.writes.clear();  // history restarted
  if (thread.writes.empty() || thread.writes.back() != at) thread.writes.push_back(at);
}

void Checkpoints::barrier(pid_t tid, HistoryPoint at, std::optional<uint64_t> shared_digest) {
  Thread& thread = threads_[tid];
  if (!thread.barriers.empty() && at < thread.barriers.back()) {  // history restarted
    thread.barriers.clear();
    thread.shared_digests.clear();
  }
  thread.barriers.push_back(at);
  if (shared_digest) thread.shared_digests[at] = *shared_digest;
}

void Checkpoints::repeated_call(pid_t tid, HistoryPoint at, const process::RepeatedCall& call) {
  Thread& thread = threads_[tid];
  if (!thread.calls.empty() && at < thread.calls.back().first) thread.calls.clear();  // history restarted
  thread.calls.emplace_back(at, call);
  ++calls_repeatable_;
}

std::vector<process::RepeatedCall> Checkpoints::calls(pid_t tid, HistoryPoint from, HistoryPoint to) const {
  std::vector<process::RepeatedCall> out;
  auto found = threads_.find(tid);
  if (found == threads_.end()) return out;
  const auto& calls = found->second.calls;
  auto call = std::lower_bound(calls.begin(), calls.end(), from,
                               [](const auto& entry, const HistoryPoint& point) { return entry.first < point; });
  for (; call != calls.end() && call->first < to; ++call) out.push_back(call->second);
  return out;
}

const process::SharedRanges* Checkpoints::shared_ranges_due(pid_t tid) const {
  auto found = threads_.find(tid);
  if (found == threads_.end() || found->second.entries.empty()) return nullptr;
  const Thread& thread = found->second;
  const Entry& newest = thread.entries.back();
  if (!thread.barriers.empty() && !(thread.barriers.back() < newest.at)) return nullptr;
  const process::ProcessCopy::SharedSnapshot* shared = newest.copy ? newest.copy->shared_snapshot() : nullptr;
  return shared && !shared->ranges.empty() ? &shared->ranges : nullptr;
}

std::optional<Checkpoints::SharedReference> Checkpoints::shared_reference(pid_t tid, HistoryPoint checkpoint) const {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return std::nullopt;
  const Thread& thread = found->second;
  std::optional<SharedReference> out;
  auto barrier = std::lower_bound(thread.barriers.begin(), thread.barriers.end(), checkpoint);
  if (barrier != thread.barriers.end()) {
    auto digest = thread.shared_digests.find(*barrier);
    out = SharedReference{*barrier, digest == thread.shared_digests.end() ? std::nullopt
                                                                          : std::optional<uint64_t>(digest->second)};
  }
  auto next = std::upper_bound(thread.entries.begin(), thread.entries.end(), checkpoint,
                               [](const HistoryPoint& p, const Entry& e) { return p < e.at; });
  if (next != thread.entries.end() && (!out || next->at < out->at)) {
    const process::ProcessCopy::SharedSnapshot* shared = next->copy ? next->copy->shared_snapshot() : nullptr;
    out = SharedReference{next->at, shared ? shared->digest : process::shared_memory_digest({}, {})};
  }
  return out;
}

Expected<Checkpoints::Usable> Checkpoints::usable_for(pid_t tid, HistoryPoint at) const {
  auto found = threads_.find(tid);
  if (found == threads_.end() || found->second.entries.empty()) {
    return make_error(ErrorCode::NotSupported, "no checkpoint of this thread");
  }
  const Thread& thread = found->second;
  auto after = std::upper_bound(thread.entries.begin(), thread.entries.end(), at,
                                [](const HistoryPoint& p, const Entry& e) { return p < e.at; });
  if (after == thread.entries.begin()) {
    return make_error(ErrorCode::NotSupported, "no checkpoint this far back");
  }
  const Entry& entry = *std::prev(after);
  const Usable usable{entry.at, entry.copy.get(), entry.valid_before};
  if (!usable.serves(at)) {
    return make_error(ErrorCode::NotSupported,
                      "another thread ran between the last checkpoint and this point (several threads)");
  }
  if (thread.first_barrier(entry.at, at)) {
    return make_error(ErrorCode::NotSupported,
                      "no checkpoint since the last system call, signal or thread change before this point");
  }
  if (thread.first_write(entry.at, at)) {
    return make_error(ErrorCode::NotSupported,
                      "no checkpoint since the client wrote the program's memory before this point");
  }
  return usable;
}

void Checkpoints::others_run(pid_t runner, const std::function<std::optional<uint64_t>(pid_t)>& progress) {
  for (auto& [tid, thread] : threads_) {
    if (tid == runner || thread.entries.empty() || thread.entries.back().valid_before) continue;
    // The open ones are the newest: each run of another thread closes all.
    const uint64_t before = progress(tid).value_or(0);
    for (auto e = thread.entries.rbegin(); e != thread.entries.rend() && !e->valid_before; ++e) {
      e->valid_before = before;
    }
  }
}

std::vector<Checkpoints::Usable> Checkpoints::all(pid_t tid) const {
  std::vector<Usable> out;
  auto found = threads_.find(tid);
  if (found == threads_.end()) return out;
  for (const Entry& e : found->second.entries) out.push_back(Usable{e.at, e.copy.get(), e.valid_before});
  return out;
}

std::optional<HistoryPoint> Checkpoints::first_barrier(pid_t tid, HistoryPoint from, HistoryPoint to) const {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return std::nullopt;
  return found->second.first_barrier(from, to);
}

std::optional<HistoryPoint> Checkpoints::first_write(pid_t tid, HistoryPoint from, HistoryPoint to) const {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return std::nullopt;
  return found->second.first_write(from, to);
}

std::optional<HistoryPoint> Checkpoints::newest(pid_t tid) const {
  auto found = threads_.find(tid);
  if (found == threads_.end() || found->second.entries.empty()) return std::nullopt;
  return found->second.entries.back().at;
}

void Checkpoints::drop_before(pid_t tid, uint64_t first_sequence) {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return;
  auto& entries = found->second.entries;
  while (!entries.empty() && entries.front().at.sequence < first_sequence) entries.pop_front();
  auto& barriers = found->second.barriers;
  while (!barriers.empty() && barriers.front().sequence < first_sequence) barriers.pop_front();
  auto& digests = found->second.shared_digests;
  digests.erase(digests.begin(), digests.lower_bound(HistoryPoint{first_sequence, 0}));
  auto& writes = found->second.writes;
  while (!writes.empty() && writes.front().sequence < first_sequence) writes.pop_front();
  auto& calls = found->second.calls;
  while (!calls.empty() && calls.front().first.sequence < first_sequence) calls.pop_front();
}

void Checkpoints::forget(pid_t tid) { threads_.erase(tid); }

void Checkpoints::clear() {
  threads_.clear();
  added_since_measured_ = 0;
  vdso_ = {0, 0};
}

void Checkpoints::drop_one() {
  // Checkpoints of different threads cannot be weighed against each other;
  // take from the thread holding the most.
  Thread* most = nullptr;
  for (auto& [tid, thread] : threads_) {
    if (most == nullptr || thread.entries.size() > most->entries.size()) most = &thread;
  }
  if (most == nullptr || most->entries.empty()) return;
  std::deque<Entry>& entries = most->entries;
  // Thin rather than forget: the one whose going merges the shortest
  // stretch relative to its age, so spacing grows with age (about
  // exponentially) and the whole history keeps checkpoints, the recent
  // past densest. A checkpoint first after a barrier cannot go (the points
  // after it would have none usable), nor the newest; the oldest goes only
  // when nothing else can.
  const uint64_t newest = entries.back().at.sequence;
  std::size_t victim = 0;
  double best = std::numeric_limits<double>::infinity();
  // Entries and barriers are both in order: one pass over each (this runs
  // at every checkpoint taken once the count is at its limit).
  const std::deque<HistoryPoint>& barriers = most->barriers;
  auto barrier = barriers.begin();
  for (std::size_t i = 1; i + 1 < entries.size(); ++i) {
    while (barrier != barriers.end() && *barrier < entries[i - 1].at) ++barrier;
    if (barrier != barriers.end() && *barrier < entries[i].at) continue;  // first_barrier(i - 1, i)
    if (most->first_write(entries[i - 1].at, entries[i].at)) continue;    // the first after a client write
    const double span = static_cast<double>(entries[i + 1].at.sequence - entries[i - 1].at.sequence);
    const double age = static_cast<double>(newest - entries[i].at.sequence + 1);
    if (span / age < best) {
      best = span / age;
      victim = i;
    }
  }
  entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(victim));
}

std::size_t Checkpoints::count() const {
  std::size_t n = 0;
  for (const auto& [tid, thread] : threads_) n += thread.entries.size();
  return n;
}

std::vector<std::size_t> spread_sample(std::size_t count, std::size_t samples) {
  std::vector<std::size_t> out;
  if (count == 0 || samples == 0) return out;
  if (count <= samples) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  if (samples == 1) return {count - 1};
  for (std::size_t i = 0; i < samples; ++i) out.push_back(i * (count - 1) / (samples - 1));
  return out;
}

std::vector<const process::ProcessCopy*> Checkpoints::held_copies() const {
  std::vector<const process::ProcessCopy*> copies;
  for (const auto& [tid, thread] : threads_) {
    for (const Entry& e : thread.entries) {
      if (e.copy) copies.push_back(e.copy.get());
    }
  }
  return copies;
}

uint64_t Checkpoints::memory_bytes() const {
  const std::vector<const process::ProcessCopy*> copies = held_copies();
  const std::vector<std::size_t> sample = spread_sample(copies.size(), kMeasuredCopies);
  if (sample.empty()) return 0;
  uint64_t bytes = 0;
  for (std::size_t i : sample) bytes += copies[i]->proportional_bytes();
  return sample.size() == copies.size() ? bytes : bytes / sample.size() * copies.size();
}

void Checkpoints::keep_within_memory() {
  uint64_t bytes = memory_bytes();
  // Thin by the excess in average shares, then measure again: a copy
  // thinned out frees only the pages no other copy shares (one taken
  // between two others may free almost nothing), so counting an average
  // share as freed each time left the copies far past the bound.
  while (bytes > limits_.memory_bytes && count() > 1) {
    const uint64_t average = std::max<uint64_t>(1, bytes / count());
    const uint64_t excess = bytes - limits_.memory_bytes;
    const std::size_t drops = std::clamp<std::size_t>(static_cast<std::size_t>(excess / average), 1, count() - 1);
    for (std::size_t i = 0; i < drops; ++i) drop_one();
    bytes = memory_bytes();
  }
  added_since_measured_ = 0;
}

std::string Checkpoints::status() const {
  char line[400];
  std::snprintf(line, sizeof line,
                "Checkpoints: %zu (at most %zu), %llu KiB of memory (their proportional share%s; at most %llu KiB); "
                "%llu taken in all, %llu filled in later; %llu system calls copies make again instead.\n",
                count(), limits_.max_count, static_cast<unsigned long long>(memory_bytes() / 1024),
                held_copies().size() > kMeasuredCopies ? ", from an even sample of them" : "",
                static_cast<unsigned long long>(limits_.memory_bytes / 1024), static_cast<unsigned long long>(taken_),
                static_cast<unsigned long long>(filled_in_), static_cast<unsigned long long>(calls_repeatable_));
  return line;
}

std::pair<uint64_t, uint64_t> read_vdso_range(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < 6 || line.compare(line.size() - 6, 6, "[vdso]") != 0) continue;
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &begin, &end) == 2) return {begin, end};
  }
  return {0, 0};
}

}  // namespace stub::tracing
