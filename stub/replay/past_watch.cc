#include "stub/replay/past_watch.h"

#include <algorithm>
#include <string>
#include <utility>

namespace stub::replay {

using btstub::ErrorCode;
using btstub::make_error;

namespace {

constexpr uint64_t kSyscallSize = 2;  // syscall, sysenter, int 0x80
// A stretch where watches fired is halved down to this many blocks before
// it is stepped: a halving costs a few native runs (~1 ms each), stepping
// a stop per instruction (~10 µs), and 256 blocks are about 1,500
// instructions.
constexpr uint64_t kStepBlocks = 256;

btstub::Error cannot_rerun(const std::string& why) {
  return make_error(ErrorCode::NotSupported, "Cannot watch in this part of the recorded past: " + why);
}

}  // namespace

Expected<std::vector<PastWatch::Stretch>> PastWatch::stretches(HistoryPoint low, HistoryPoint high) {
  std::vector<Stretch> out;
  // [from, to) cannot be searched, for `why`.
  auto unsearchable = [&](HistoryPoint from, HistoryPoint to, std::string why) {
    Stretch part;
    part.start.at = from;
    part.end = to;
    part.unsearchable = std::move(why);
    out.push_back(std::move(part));
  };
  // From the checkpoint that serves `low`, else from the first after it
  // (what lies before that cannot be searched).
  std::vector<tracing::Checkpoints::Usable> starts;
  auto first = checkpoints_.usable_for(tid_, low);
  if (first) starts.push_back(*first);
  const std::vector<tracing::Checkpoints::Usable> every = checkpoints_.all(tid_);
  for (const auto& c : every) {
    if ((first ? first->at < c.at : low < c.at) && c.at < high) starts.push_back(c);
  }
  if (!first) {
    if (starts.empty()) return cannot_rerun(first.error().message);
    unsearchable(low, starts.front().at, first.error().message);
  }
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const HistoryPoint next = i + 1 < starts.size() ? starts[i + 1].at : high;
    // A re-run from here past the client's write would miss its bytes.
    if (auto write = checkpoints_.first_write(tid_, starts[i].at, next); write && *write < next) {
      unsearchable(starts[i].at, next, "the client wrote the program's memory there, with no checkpoint after it");
      continue;
    }
    if (start_check_) {
      if (auto why = start_check_(starts[i])) {
        unsearchable(starts[i].at, next, *why);
        continue;
      }
    }
    Stretch stretch{starts[i], next, false, std::nullopt, std::nullopt};
    std::optional<HistoryPoint> gap;  // from a call with no checkpoint right after it to `next`
    if (auto barrier = checkpoints_.first_barrier(tid_, starts[i].at, next)) {
      stretch.end = *barrier;
      stretch.ends_at_call = true;
      const HistoryPoint after{barrier->sequence, barrier->pc + kSyscallSize};
      // The checkpoint right after the call may lie at `high` itself (a
      // step that starts at the call, a search back from just after it):
      // no start of a stretch, but what the call wrote is read from it.
      auto at_after = std::find_if(every.begin(), every.end(), [&](const auto& c) { return c.at == after; });
      if (i + 1 < starts.size() && starts[i + 1].at == after) {
        stretch.after_call = starts[i + 1];
      } else if (at_after != every.end() && !(at_after->at < high)) {
        stretch.after_call = *at_after;
      } else if (*barrier < high && next > low) {
        gap = *barrier;
      }
    }
    // A copy of a program with several threads stands for its thread
    // only until another one ran.
    if (!starts[i].serves(stretch.end) && low < stretch.end) {
      unsearchable(starts[i].at, next, "another thread ran in between (several threads)");
      continue;
    }
    out.push_back(stretch);
    if (gap) unsearchable(*gap, next, "a signal, or a system call without a checkpoint after it, lies in between");
  }
  return out;
}

Expected<PastWatch::CountedRun> PastWatch::counted_run(process::ProcessCopy& base, HistoryPoint from,
                                                      HistoryPoint to, bool armed) {
  auto visits = decoder::visits_between(trace_, live_pc_, from, to, checkpoints_.vdso());
  if (!visits || *visits == 0) return cannot_rerun("it calls into the vDSO or lies outside the history");
  auto copy = base.fork();
  if (!copy) return copy.error();
  if (armed) {
    if (auto done = (*copy)->arm(watches_); !done) return done.error();
  }
  auto enters = [&](uint64_t inside_low, uint64_t inside_high) {
    return decoder::enters_inside(trace_, live_pc_, from, to, inside_low, inside_high);
  };
  (*copy)->expect_calls(checkpoints_.calls(tid_, from, to));
  auto fired = (*copy)->run_to_counting(to.pc, *visits, enters);
  if (!fired) return cannot_rerun(fired.error().message);
  if ((*copy)->expects_calls()) return cannot_rerun("a re-run left the recorded path");
  if (armed) ++effort_.native_runs;
  return CountedRun{std::move(*copy), *fired};
}

Expected<std::vector<PastWatchHit>> PastWatch::locate(process::ProcessCopy& base, HistoryPoint from,
                                                      HistoryPoint to, uint64_t fired, HistoryPoint low,
                                                      HistoryPoint high, Sought sought) {
  std::vector<PastWatchHit> out;
  if (!(low < to) || !(from < high)) return out;  // every hit here lies in [from, to)
  if (to.sequence > from.sequence + kStepBlocks) {
    const uint64_t middle = from.sequence + (to.sequence - from.sequence) / 2;
    auto block = decoder::history_block(trace_, middle, live_pc_);
    if (!block) return cannot_rerun("it lies outside the history");
    const HistoryPoint mid{middle, block->begin};
    ++effort_.halvings;
    auto at_mid = counted_run(base, from, mid, false);
    if (!at_mid) return at_mid.error();
    auto later = counted_run(*at_mid->copy, mid, to, true);
    if (!later) return later.error();
    if (later->fired > fired) return cannot_rerun("a re-run left the recorded path");
    const uint64_t earlier_fired = fired - later->fired;
    later->copy.reset();
    std::vector<PastWatchHit> earlier_hits, later_hits;
    auto search = [&](bool earlier) -> Expected<void> {
      auto found = earlier ? locate(base, from, mid, earlier_fired, low, high, sought)
                           : locate(*at_mid->copy, mid, to, later->fired, low, high, sought);
      if (!found) return found.error();
      (earlier ? earlier_hits : later_hits) = std::move(*found);
      return {};
    };
    // The half the sought hit is in when it has one in [low, high); the
    // other one only when it has none there.
    const bool first_earlier = sought == Sought::Oldest;
    if ((first_earlier ? earlier_fired : later->fired) > 0) {
      if (auto done = search(first_earlier); !done) return done.error();
    }
    if (!first_earlier) at_mid->copy.reset();  // the later half is done with
    if (earlier_hits.empty() && later_hits.empty() && (first_earlier ? later->fired : earlier_fired) > 0) {
      if (auto done = search(!first_earlier); !done) return done.error();
    }
    out = std::move(earlier_hits);
    out.insert(out.end(), later_hits.begin(), later_hits.end());
    return out;
  }
  auto visits = decoder::visits_between(trace_, live_pc_, from, to, checkpoints_.vdso());
  if (!visits || *visits == 0) return cannot_rerun("it calls into the vDSO or lies outside the history");
  auto stepper = base.fork();
  if (!stepper) return stepper.error();
  if (auto armed = (*stepper)->arm(watches_); !armed) return armed.error();
  (*stepper)->expect_calls(checkpoints_.calls(tid_, from, to));
  const uint64_t stops_before = (*stepper)->stops();
  auto hits = (*stepper)->step_to(to.pc, *visits);
  effort_.stepped += (*stepper)->stops() - stops_before;
  if (!hits) return cannot_rerun(hits.error().message);
  if ((*stepper)->expects_calls()) return cannot_rerun("a re-run left the recorded path");
  // The native runs counted `fired` hits here: stepping the same stretch
  // must see some (it may see more: a repeated string instruction's
  // iterations can be reported together when run natively).
  if (hits->empty()) return cannot_rerun("a re-run left the recorded path");
  for (const auto& h : *hits) {
    auto at = decoder::nth_visit(trace_, live_pc_, from, h.pc, h.visit);
    if (!at) return cannot_rerun("a re-run left the recorded path");
    if (low <= *at && *at < high) out.push_back(PastWatchHit{*at, h.hit});
  }
  return out;
}

Expected<std::vector<PastWatchHit>> PastWatch::hits_in(const Stretch& stretch, HistoryPoint low, HistoryPoint high,
                                                       Sought sought) {
  std::vector<PastWatchHit> out;
  auto run = counted_run(*stretch.start.copy, stretch.start.at, stretch.end, true);
  if (!run) return run.error();
  if (run->fired > 0) {
    auto found = locate(*stretch.start.copy, stretch.start.at, stretch.end, run->fired, low, high, sought);
    if (!found) return found.error();
    out = std::move(*found);
  }
  if (stretch.ends_at_call && stretch.after_call && low <= stretch.end && stretch.end < high) {
    // What the system call wrote: the copy stands before it, the next
    // checkpoint right after it.
    for (int slot = 0; slot < process::DebugRegisterState::kSlotCount; ++slot) {
      if (!watches_.in_use(slot)) continue;
      const uint64_t addr = watches_.address(slot), len = watches_.length(slot);
      auto before = run->copy->read_memory(addr, len);
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
    if (it->unsearchable) return cannot_rerun(*it->unsearchable);
    auto hits = hits_in(*it, low, high, Sought::Newest);
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
    if (stretch.unsearchable) return cannot_rerun(*stretch.unsearchable);
    auto hits = hits_in(stretch, low, high, Sought::Oldest);
    if (!hits) return hits.error();
    if (!hits->empty()) return std::optional<PastWatchHit>(hits->front());
  }
  return std::optional<PastWatchHit>{};
}

}  // namespace stub::replay
