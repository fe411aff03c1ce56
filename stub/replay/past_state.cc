#include "stub/replay/past_state.h"

#include <cstdio>

#include "protocol/amd64_registers.h"

namespace stub::replay {

using btstub::ErrorCode;
using btstub::make_error;

namespace {

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

Expected<void> PastState::run_copy(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                                   HistoryPoint from, HistoryPoint to) {
  auto hits = decoder::visits_between(trace, live_pc, from, to, checkpoints_.vdso());
  if (!hits || *hits == 0) {
    return make_error(ErrorCode::NotSupported, "the history between the checkpoint and this point cannot be re-run");
  }
  last_run_ = LastRun{*hits, current_->copy->stops()};
  // The copy counts the visits itself where the bytes at the pc can hold a
  // jmp that nothing in the stretch jumps into the middle of.
  HistoryPoint aim = to;
  auto enters = [&](uint64_t low, uint64_t high) {
    return decoder::enters_inside(trace, live_pc, from, aim, low, high);
  };
  // Where they cannot (an indirect call or a jump target among the bytes
  // there), the first instruction of the point's block may: the copy counts
  // its visits, then runs on to the point within the block.
  if (*hits >= process::ProcessCopy::kCountingMinHits) {
    auto here = current_->copy->counts_at(to.pc, enters);
    if (!here) return here.error();
    auto block = decoder::history_block(trace, to.sequence, live_pc);
    if (!*here && block && block->begin != to.pc) {
      aim = HistoryPoint{to.sequence, block->begin};
      auto there = current_->copy->counts_at(aim.pc, enters);
      if (!there) return there.error();
      auto visits = decoder::visits_between(trace, live_pc, from, aim, checkpoints_.vdso());
      if (*there && visits && *visits > 0) {
        hits = visits;
      } else {
        aim = to;
      }
    }
  }
  // The copy standing at a visit counts it as the first of the rest.
  while (*hits > kSnapshotHits) {
    if (auto ran = current_->copy->run_to(aim.pc, kSnapshotHits, enters); !ran) return ran;
    auto point = decoder::nth_visit(trace, live_pc, from, aim.pc, kSnapshotHits);
    if (!point) return make_error(ErrorCode::Internal, "the history has fewer visits than counted");
    if (auto snapshot = current_->copy->fork()) {
      snapshots_[{tid, *point}] = std::move(*snapshot);
      if (snapshots_.size() > kMaxSnapshots) snapshots_.erase(snapshots_.begin());
    }
    from = *point;
    *hits -= kSnapshotHits - 1;
  }
  auto ran = current_->copy->run_to(aim.pc, *hits, enters);
  if (ran && aim != to) {
    auto rest = decoder::visits_between(trace, live_pc, aim, to, checkpoints_.vdso());
    if (!rest || *rest == 0) return make_error(ErrorCode::Internal, "the point is not in its block");
    ran = current_->copy->run_to(to.pc, *rest);
  }
  last_run_.stops = current_->copy->stops() - last_run_.stops;
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
    auto ran = run_copy(tid, trace, live_pc, from, at);
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

void PastState::clear() {
  current_.reset();
  snapshots_.clear();
  problem_.clear();
}

std::string PastState::status() const {
  if (!problem_.empty()) return "Values: only what the history determines (" + problem_ + ").\n";
  if (current_) {
    return "Values: from a copy of the program re-run from a checkpoint (pid " +
           std::to_string(current_->copy->pid()) + "; its last re-run stopped it " +
           std::to_string(last_run_.stops) + " times for " + std::to_string(last_run_.visits) +
           " visits of its pc).\n";
  }
  return {};
}

}  // namespace stub::replay
