#include "stub/tracing/checkpoints.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace stub::tracing {

using btstub::ErrorCode;
using btstub::make_error;

void Checkpoints::add(pid_t tid, HistoryPoint at, std::unique_ptr<process::ProcessCopy> copy) {
  Thread& thread = threads_[tid];
  // A point is reached once: a newer checkpoint never stands before an older one.
  while (!thread.entries.empty() && !(thread.entries.back().at < at)) thread.entries.pop_back();
  thread.entries.push_back(Entry{at, std::move(copy)});
  while (count() > limits_.max_count) drop_oldest();
}

void Checkpoints::barrier(pid_t tid, HistoryPoint at) {
  Thread& thread = threads_[tid];
  if (!thread.barriers.empty() && at < thread.barriers.back()) thread.barriers.clear();  // history restarted
  thread.barriers.push_back(at);
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
  auto barrier = std::lower_bound(thread.barriers.begin(), thread.barriers.end(), entry.at);
  if (barrier != thread.barriers.end() && *barrier < at) {
    return make_error(ErrorCode::NotSupported,
                      "no checkpoint since the last system call, signal or thread change before this point");
  }
  return Usable{entry.at, entry.copy.get()};
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
}

void Checkpoints::forget(pid_t tid) { threads_.erase(tid); }

void Checkpoints::clear() {
  threads_.clear();
  vdso_ = {0, 0};
}

void Checkpoints::drop_oldest() {
  // The thread whose oldest checkpoint is oldest in the history cannot be
  // told across threads; take from the thread holding the most.
  Thread* most = nullptr;
  for (auto& [tid, thread] : threads_) {
    if (most == nullptr || thread.entries.size() > most->entries.size()) most = &thread;
  }
  if (most != nullptr && !most->entries.empty()) most->entries.pop_front();
}

std::size_t Checkpoints::count() const {
  std::size_t n = 0;
  for (const auto& [tid, thread] : threads_) n += thread.entries.size();
  return n;
}

std::string Checkpoints::status() const {
  uint64_t bytes = 0;
  for (const auto& [tid, thread] : threads_) {
    for (const Entry& e : thread.entries) bytes += e.copy ? e.copy->private_bytes() : 0;
  }
  char line[160];
  std::snprintf(line, sizeof line, "Checkpoints: %zu (at most %zu), %llu KiB of private memory.\n", count(),
                limits_.max_count, static_cast<unsigned long long>(bytes / 1024));
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
