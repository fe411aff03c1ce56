#include "stub/tracing/map_changes.h"

#include <algorithm>
#include <limits>

namespace stub::tracing {
namespace {

using Bounds = std::vector<std::pair<pid_t, uint64_t>>;

// Each thread's later bound of the two.
void widen(Bounds& into, const Bounds& from) {
  for (const auto& bound : from) {
    auto it = std::find_if(into.begin(), into.end(), [&](const auto& b) { return b.first == bound.first; });
    if (it == into.end()) {
      into.push_back(bound);
    } else {
      it->second = std::max(it->second, bound.second);
    }
  }
}

// Points at `sequence` itself: the block of the call (before it or not,
// unknown), or where the thread stood still (before the change).
uint64_t after(uint64_t sequence) {
  return sequence == std::numeric_limits<uint64_t>::max() ? sequence : sequence + 1;
}

}  // namespace

void MapChanges::note(uint64_t begin, uint64_t end, pid_t thread, uint64_t sequence, std::span<const pid_t> others) {
  Change change{begin, end, {}};
  change.before.emplace_back(thread, after(sequence));
  for (pid_t other : others) {
    if (other != thread) change.before.emplace_back(other, std::numeric_limits<uint64_t>::max());
  }
  add(std::move(change));
}

void MapChanges::note_stopped(uint64_t begin, uint64_t end, std::span<const std::pair<pid_t, uint64_t>> threads) {
  Change change{begin, end, {}};
  for (const auto& [thread, sequence] : threads) change.before.emplace_back(thread, after(sequence));
  add(std::move(change));
}

void MapChanges::add(Change change) {
  if (change.begin >= change.end) return;
  const uint64_t begin = change.begin;
  const uint64_t end = change.end;
  auto at = std::lower_bound(changes_.begin(), changes_.end(), begin,
                             [](const Change& c, uint64_t b) { return c.begin < b; });
  // The same range again (a loop's mprotect): one entry, the later bounds.
  for (auto it = at; it != changes_.end() && it->begin == begin; ++it) {
    if (it->end == end) {
      widen(it->before, change.before);
      return;
    }
  }
  changes_.insert(at, std::move(change));
  if (changes_.size() > kMaxChanges) merge_closest();
}

// The two neighbours with the smallest gap between them become one.
void MapChanges::merge_closest() {
  std::size_t best = 0;
  uint64_t best_gap = std::numeric_limits<uint64_t>::max();
  for (std::size_t i = 0; i + 1 < changes_.size(); ++i) {
    const uint64_t gap = changes_[i + 1].begin > changes_[i].end ? changes_[i + 1].begin - changes_[i].end : 0;
    if (gap < best_gap) {
      best_gap = gap;
      best = i;
    }
  }
  Change& into = changes_[best];
  const Change& next = changes_[best + 1];
  into.end = std::max(into.end, next.end);
  widen(into.before, next.before);
  changes_.erase(changes_.begin() + static_cast<std::ptrdiff_t>(best) + 1);
}

std::vector<std::pair<uint64_t, uint64_t>> MapChanges::changed_after(pid_t thread, uint64_t sequence, uint64_t begin,
                                                                     uint64_t end) const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const Change& c : changes_) {
    if (c.begin >= end) break;
    if (c.end <= begin) continue;
    auto bound = std::find_if(c.before.begin(), c.before.end(), [&](const auto& b) { return b.first == thread; });
    if (bound == c.before.end() || sequence >= bound->second) continue;
    out.emplace_back(std::max(c.begin, begin), std::min(c.end, end));
  }
  // Sorted by begin already; overlaps joined.
  std::vector<std::pair<uint64_t, uint64_t>> joined;
  for (const auto& range : out) {
    if (!joined.empty() && range.first <= joined.back().second) {
      joined.back().second = std::max(joined.back().second, range.second);
    } else {
      joined.push_back(range);
    }
  }
  return joined;
}

}  // namespace stub::tracing
