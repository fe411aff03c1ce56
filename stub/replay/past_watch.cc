#include "stub/replay/past_watch.h"

#include <algorithm>

namespace stub::replay {

using btstub::ErrorCode;
using btstub::make_error;

namespace {

constexpr uint64_t kSyscallSize = 2;  // syscall, sysenter, int 0x80

btstub::Error cannot_rerun(const std::string& why) {
  return make_error(ErrorCode::NotSupported, "Cannot watch in this part of the recorded past: " + why);
}

}  // namespace

Expected<std::vector<PastWatch::Stretch>> PastWatch::stretches(HistoryPoint low, HistoryPoint high) {
  auto first = checkpoints_.usable_for(tid_, low);
  if (!first) return cannot_rerun(first.error().message);
  std::vector<tracing::Checkpoints::Usable> starts{*first};
  for (const auto& c : checkpoints_.all(tid_)) {
    if (first->at < c.at && c.at < high) starts.push_back(c);
  }
  std::vector<Stretch> out;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const HistoryPoint next = i + 1 < starts.size() ? starts[i + 1].at : high;
    Stretch stretch{starts[i], next, false, std::nullopt};
    if (auto barrier = checkpoints_.first_barrier(tid_, starts[i].at, next)) {
      stretch.end = *barrier;
      stretch.ends_at_call = true;
      const HistoryPoint after{barrier->sequence, barrier->pc + kSyscallSize};
      if (i + 1 < starts.size() && starts[i + 1].at == after) {
        stretch.after_call = starts[i + 1];
      } else if (*barrier < high && next > low) {
        return cannot_rerun("a signal, or a system call without a checkpoint after it, lies in between");
      }
    }
    out.push_back(stretch);
  }
  return out;
}

Expected<std::vector<PastWatchHit>> PastWatch::hits_in(const Stretch& stretch, HistoryPoint low,
                                                       HistoryPoint high) {
  std::vector<PastWatchHit> out;
  const HistoryPoint start = stretch.start.at;
  auto visits = decoder::visits_between(trace_, live_pc_, start, stretch.end, checkpoints_.vdso());
  if (!visits || *visits == 0) return cannot_rerun("it calls into the vDSO or lies outside the history");
  auto copy = stretch.start.copy->fork();
  if (!copy) return copy.error();
  if (auto armed = (*copy)->arm(watches_); !armed) return armed.error();
  auto fired = (*copy)->run_to_counting(stretch.end.pc, *visits);
  if (!fired) return cannot_rerun(fired.error().message);
  if (*fired > 0) {
    auto stepper = stretch.start.copy->fork();
    if (!stepper) return stepper.error();
    if (auto armed = (*stepper)->arm(watches_); !armed) return armed.error();
    auto hits = (*stepper)->step_to(stretch.end.pc, *visits);
    if (!hits) return cannot_rerun(hits.error().message);
    for (const auto& h : *hits) {
      auto at = decoder::nth_visit(trace_, live_pc_, start, h.pc, h.visit);
      if (!at) return cannot_rerun("a re-run left the recorded path");
      if (low <= *at && *at < high) out.push_back(PastWatchHit{*at, h.hit});
    }
  }
  if (stretch.ends_at_call && stretch.after_call && low <= stretch.end && stretch.end < high) {
    // What the system call wrote: the copy stands before it, the next
    // checkpoint right after it.
    for (int slot = 0; slot < process::DebugRegisterState::kSlotCount; ++slot) {
      if (!watches_.in_use(slot)) continue;
      const uint64_t addr = watches_.address(slot), len = watches_.length(slot);
      auto before = (*copy)->read_memory(addr, len);
      auto after = stretch.after_call->copy->read_memory(addr, len);
      const bool changed = before.ok() != after.ok() || (before && after && *before != *after);
      if (!changed) continue;
      auto hit = watches_.hits_for_dr6(uint64_t{1} << slot);
      if (!hit.empty()) out.push_back(PastWatchHit{stretch.end, hit.front()});
      break;
    }
  }
  return out;
}

Expected<std::optional<PastWatchHit>> PastWatch::last_in(HistoryPoint low, HistoryPoint high) {
  if (!(low < high)) return std::optional<PastWatchHit>{};
  auto all = stretches(low, high);
  if (!all) return all.error();
  for (auto it = all->rbegin(); it != all->rend(); ++it) {
    auto hits = hits_in(*it, low, high);
    if (!hits) return hits.error();
    if (!hits->empty()) return std::optional<PastWatchHit>(hits->back());
  }
  return std::optional<PastWatchHit>{};
}

Expected<std::optional<PastWatchHit>> PastWatch::first_in(HistoryPoint low, HistoryPoint high) {
  if (!(low < high)) return std::optional<PastWatchHit>{};
  auto all = stretches(low, high);
  if (!all) return all.error();
  for (const Stretch& stretch : *all) {
    auto hits = hits_in(stretch, low, high);
    if (!hits) return hits.error();
    if (!hits->empty()) return std::optional<PastWatchHit>(hits->front());
  }
  return std::optional<PastWatchHit>{};
}

}  // namespace stub::replay
