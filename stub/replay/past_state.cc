#include "stub/replay/past_state.h"

#include <algorithm>

#include "protocol/amd64_registers.h"
#include "protocol/hex_text.h"

namespace stub::replay {

using btstub::ErrorCode;
using btstub::make_error;

namespace {

using protocol::hex;

// A run that arrived without making every system call the recording
// made on the way (process/repeated_call.h) went another way.
btstub::Error unmade_calls() {
  return btstub::make_error(ErrorCode::Internal,
                            "the re-run arrived without making every system call the recording had on the way");
}

}  // namespace

Expected<void> PastState::run_copy(process::ProcessCopy& copy, pid_t tid, const decoder::BlockTrace& trace,
                                   uint64_t live_pc, HistoryPoint from, HistoryPoint to) {
  // The history from `from` to the point is read once where it fits
  // kStretchBlocks: every pass below would decode its chunks again (~20-40
  // ns a block), and a run passes it several times.
  std::optional<decoder::HistoryStretch> stretch;
  if (!(to < from) && to.sequence - from.sequence < kStretchBlocks) {
    stretch = decoder::HistoryStretch::read(trace, live_pc, from, to.sequence);
  }
  const std::pair<uint64_t, uint64_t> vdso = checkpoints_.vdso();
  auto visits = [&](HistoryPoint a, HistoryPoint b) {
    return stretch ? stretch->visits(a, b, vdso) : decoder::visits_between(trace, live_pc, a, b, vdso);
  };
  auto hits = visits(from, to);
  if (!hits || *hits == 0) {
    return make_error(ErrorCode::NotSupported, "the history between the checkpoint and this point cannot be re-run");
  }
  last_run_ = LastRun{*hits, copy.stops()};
  copy.expect_calls(checkpoints_.calls(tid, from, to));
  // The copy counts the visits itself where the bytes at the pc can hold a
  // jmp that nothing in the leg it runs jumps into the middle of.
  HistoryPoint aim = to;
  HistoryPoint leg_end = to;
  auto enters = [&](uint64_t low, uint64_t high) {
    return stretch ? stretch->enters_inside(from, leg_end, low, high)
                   : decoder::enters_inside(trace, live_pc, from, leg_end, low, high);
  };
  bool counted = false;
  if (*hits >= process::ProcessCopy::kCountingMinHits) {
    auto here = copy.counts_at(to.pc, enters);
    if (!here) return here.error();
    counted = *here;
    // Where it cannot (an indirect call or a jump target among the bytes
    // there), the first instruction of the point's block may: the copy
    // counts its visits, then runs on to the point within the block.
    auto block = decoder::history_block(trace, to.sequence, live_pc);
    if (!counted && block && block->begin != to.pc) {
      leg_end = HistoryPoint{to.sequence, block->begin};
      auto there = copy.counts_at(leg_end.pc, enters);
      if (!there) return there.error();
      auto to_begin = visits(from, leg_end);
      if (*there && to_begin && *to_begin > 0) {
        aim = leg_end;
        hits = to_begin;
        counted = true;
      }
      leg_end = aim;
    }
  }
  // Snapshots every kSnapshotHits visits where the copy stops at each (the
  // next step back then passes at most that many); where it counts them,
  // a run costs one stop, and at most kCountedLegs snapshots are left.
  const uint64_t every = counted ? std::max<uint64_t>(kSnapshotHits, *hits / kCountedLegs + 1) : kSnapshotHits;
  // The copy standing at a visit counts it as the first of the rest.
  while (*hits > every) {
    auto point = stretch ? stretch->nth_visit(from, aim.pc, every)
                         : decoder::nth_visit(trace, live_pc, from, aim.pc, every);
    if (!point) return make_error(ErrorCode::Internal, "the history has fewer visits than counted");
    leg_end = *point;
    if (auto ran = copy.run_to(aim.pc, every, enters); !ran) return ran;
    if (auto snapshot = copy.fork()) {
      snapshots_[{tid, *point}] = std::move(*snapshot);
      if (snapshots_.size() > kMaxSnapshots) snapshots_.erase(snapshots_.begin());
    }
    from = *point;
    *hits -= every - 1;
  }
  leg_end = aim;
  auto ran = copy.run_to(aim.pc, *hits, enters);
  if (ran && aim != to) {
    auto rest = visits(aim, to);
    if (!rest || *rest == 0) return make_error(ErrorCode::Internal, "the point is not in its block");
    ran = copy.run_to(to.pc, *rest);
  }
  last_run_.stops = copy.stops() - last_run_.stops;
  if (ran && copy.expects_calls()) return unmade_calls();
  return ran;
}

Expected<process::ProcessCopy*> PastState::at(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                                              HistoryPoint at, const decoder::StackState& expected) {
  if (current_ && current_->tid == tid && current_->at == at) {
    problem_.clear();
    return current_->copy.get();
  }
  auto result = [&]() -> Expected<process::ProcessCopy*> {
    auto usable = checkpoints_.usable_for(tid, at);
    if (!usable) return usable.error();
    if (auto changed = usable->copy->file_changed_since_taken()) {
      return make_error(ErrorCode::NotSupported, "the file " + *changed +
                                                     ", which the program maps, changed since the checkpoint: a copy "
                                                     "would show it as it is now");
    }
    if (auto shared = check_shared(tid, trace, live_pc, *usable); !shared) return shared.error();
    // From the newest of: the checkpoint, a snapshot after it, and the
    // copy itself when it stands between them and the point.
    HistoryPoint from = usable->at;
    process::ProcessCopy* base = usable->copy;
    auto snapshot = snapshots_.upper_bound({tid, at});
    if (snapshot != snapshots_.begin()) {
      --snapshot;
      if (snapshot->first.first == tid && !(snapshot->first.second < usable->at)) {
        from = snapshot->first.second;
        base = snapshot->second.get();
      }
    }
    const bool onward = current_ && current_->tid == tid && current_->checkpoint == usable->at &&
                        current_->at < at && !(current_->at < from);
    if (onward) {
      from = current_->at;
    } else {
      current_.reset();
      auto copy = base->fork();
      if (!copy) return copy.error();
      current_ = Current{tid, usable->at, from, std::move(*copy)};
    }
    auto ran = run_copy(*current_->copy, tid, trace, live_pc, from, at);
    if (!ran) {
      current_.reset();
      return ran.error();
    }
    current_->at = at;
    auto regs = current_->copy->registers();
    if (!regs) {
      current_.reset();
      return regs.error();
    }
    using protocol::Amd64Reg;
    const uint64_t pc = regs->get_u64(Amd64Reg::rip);
    const uint64_t rsp = regs->get_u64(Amd64Reg::rsp);
    const uint64_t rbp = regs->get_u64(Amd64Reg::rbp);
    if (pc != at.pc || (expected.rsp && *expected.rsp != rsp) || (expected.rbp && *expected.rbp != rbp)) {
      current_.reset();
      return make_error(ErrorCode::Internal, "the re-run left the recorded path before " + hex(at.pc));
    }
    return current_->copy.get();
  }();
  problem_ = result ? std::string() : result.error().message;
  return result;
}

Expected<void> PastState::check_shared(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                                       const tracing::Checkpoints::Usable& usable) {
  const process::ProcessCopy::SharedSnapshot* shared = usable.copy->shared_snapshot();
  if (shared == nullptr || shared->ranges.empty()) return {};
  const std::optional<tracing::Checkpoints::SharedReference> reference = checkpoints_.shared_reference(tid, usable.at);
  // Nothing after the checkpoint knows the program's shared memory: the
  // stretch reaches the present, which the program holds now.
  const HistoryPoint to = reference ? reference->at : HistoryPoint{trace.end_sequence(), live_pc};
  const auto key = std::tuple{tid, usable.at, to};
  auto [verdict, fresh] = shared_checked_.try_emplace(key);
  if (fresh) {
    verdict->second = [&]() -> std::string {
      const std::optional<uint64_t> expected =
          reference ? reference->digest : std::optional(process::shared_memory_digest(shared->ranges, live_memory_));
      if (!expected) return "the program's shared memory was not read at the next system call";
      uint64_t found = shared->digest;
      if (to != usable.at) {
        auto copy = usable.copy->fork();
        if (!copy) return copy.error().message;
        if (auto ran = run_copy(**copy, tid, trace, live_pc, usable.at, to); !ran) {
          return "a re-run through the memory the program shares did not arrive (" + ran.error().message + ")";
        }
        found = (*copy)->shared_digest();
      }
      if (found != *expected) {
        return "another process wrote memory the program shares with it after the checkpoint: a re-run "
               "does not see what the program read there";
      }
      return {};
    }();
  }
  if (!verdict->second.empty()) return make_error(ErrorCode::NotSupported, verdict->second);
  return {};
}

bool PastState::fill_in(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc) {
  const uint64_t spacing = checkpoints_.limits().fill_in_branches;
  if (spacing == 0 || checkpoints_.count() >= checkpoints_.limits().max_count) return false;
  const std::vector<tracing::Checkpoints::Usable> all = checkpoints_.all(tid);
  const HistoryPoint end{trace.end_sequence(), live_pc};
  // The newest first: a step back most likely goes there.
  for (std::size_t i = all.size(); i-- > 0;) {
    const tracing::Checkpoints::Usable& from = all[i];
    const HistoryPoint next = i + 1 < all.size() ? all[i + 1].at : end;
    // Half a spacing more at least, so that no fill-in lands next to the
    // checkpoint after it.
    if (next.sequence < from.at.sequence + spacing + spacing / 2) continue;
    if (from.valid_before || from.copy == nullptr || unfillable_.count({tid, from.at}) != 0) continue;
    auto made = fill_in_copy(from, tid, trace, live_pc, spacing);
    if (!made) {
      unfillable_.insert({tid, from.at});
      return true;
    }
    return checkpoints_.fill_in(tid, made->first, std::move(made->second));
  }
  return false;
}

Expected<std::pair<HistoryPoint, std::unique_ptr<process::ProcessCopy>>> PastState::fill_in_copy(
    const tracing::Checkpoints::Usable& from, pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
    uint64_t spacing) {
  if (from.copy->file_changed_since_taken()) return make_error(ErrorCode::NotSupported, "a mapped file changed");
  // The stretch's shared memory is checked against the checkpoint after
  // it (check_shared): one made by a re-run would vouch for itself.
  const process::ProcessCopy::SharedSnapshot* shared = from.copy->shared_snapshot();
  if (shared != nullptr && !shared->ranges.empty()) {
    return make_error(ErrorCode::NotSupported, "the program shares memory");
  }
  // A turn must stay short: the stretch is read once, and the point is
  // where the copy stops least, in the second half of the next `spacing`
  // branches (where the copy cannot count a pc's runs itself it stops at
  // each: in a hot loop, tens of thousands of stops).
  auto stretch = decoder::HistoryStretch::read(trace, live_pc, from.at, from.at.sequence + spacing);
  if (!stretch) return make_error(ErrorCode::Internal, "the stretch is outside the history");
  constexpr std::size_t kCandidates = 4;
  auto copy = from.copy->fork();
  if (!copy) return copy.error();
  std::optional<decoder::HistoryStretch::VisitedPoint> to;
  for (const auto& candidate : stretch->fewest_visited(from.at.sequence + spacing / 2, kCandidates)) {
    if (stretch->touches(candidate.at, checkpoints_.vdso())) continue;
    auto usable = checkpoints_.usable_for(tid, candidate.at);
    if (!usable || usable->at != from.at) continue;  // a barrier or client write in between
    if (candidate.visits < process::ProcessCopy::kCountingMinHits) {
      to = candidate;
      break;
    }
    auto enters = [&](uint64_t low, uint64_t high) { return stretch->enters_inside(candidate.at, low, high); };
    auto counts = (*copy)->counts_at(candidate.at.pc, enters);
    if (!counts) return counts.error();
    if (*counts) {
      to = candidate;
      break;
    }
  }
  if (!to) return make_error(ErrorCode::NotSupported, "no point a copy reaches with few stops");
  (*copy)->expect_calls(checkpoints_.calls(tid, from.at, to->at));
  auto enters = [&](uint64_t low, uint64_t high) { return stretch->enters_inside(to->at, low, high); };
  if (auto ran = (*copy)->run_to(to->at.pc, to->visits, enters); !ran) return ran.error();
  if ((*copy)->expects_calls()) return unmade_calls();
  auto regs = (*copy)->registers();
  if (!regs) return regs.error();
  if (regs->get_u64(protocol::Amd64Reg::rip) != to->at.pc) {
    return make_error(ErrorCode::Internal, "the re-run left the recorded path before " + hex(to->at.pc));
  }
  return std::pair{to->at, std::move(*copy)};
}

void PastState::clear() {
  shared_checked_.clear();
  current_.reset();
  snapshots_.clear();
  problem_.clear();
}

std::string PastState::status() const {
  if (!problem_.empty()) return "Values: only what the history determines (" + problem_ + ").\n";
  if (current_) {
    return "Values: from a copy of the program re-run from the checkpoint at branch " +
           std::to_string(current_->checkpoint.sequence) + " (pid " + std::to_string(current_->copy->pid()) +
           "; its last re-run stopped it " +
           std::to_string(last_run_.stops) + " times for " + std::to_string(last_run_.visits) +
           " visits of its pc).\n";
  }
  return {};
}

}  // namespace stub::replay
