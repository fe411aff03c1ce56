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

Expected<void> PastState::run_copy(const decoder::BlockTrace& trace, uint64_t live_pc, HistoryPoint from,
                                   HistoryPoint to) {
  auto hits = decoder::visits_between(trace, live_pc, from, to, checkpoints_.vdso());
  if (!hits || *hits == 0) {
    return make_error(ErrorCode::NotSupported, "the history between the checkpoint and this point cannot be re-run");
  }
  return current_->copy->run_to(to.pc, *hits);
}

Expected<process::ProcessCopy*> PastState::at(pid_t tid, const decoder::BlockTrace& trace, uint64_t live_pc,
                                              HistoryPoint at, const decoder::StackState& expected) {
  if (current_ && current_->tid == tid && current_->at == at) return current_->copy.get();
  auto result = [&]() -> Expected<process::ProcessCopy*> {
    auto usable = checkpoints_.usable_for(tid, at);
    if (!usable) return usable.error();
    // Forward from where the copy stands, when it came from the same checkpoint.
    const bool onward = current_ && current_->tid == tid && current_->checkpoint == usable->at &&
                        current_->at < at;
    HistoryPoint from = onward ? current_->at : usable->at;
    if (!onward) {
      current_.reset();
      auto copy = usable->copy->fork();
      if (!copy) return copy.error();
      current_ = Current{tid, usable->at, usable->at, std::move(*copy)};
    }
    auto ran = run_copy(trace, live_pc, from, at);
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
  problem_.clear();
}

std::string PastState::status() const {
  if (current_) {
    return "Values: from a copy of the program re-run from a checkpoint (pid " +
           std::to_string(current_->copy->pid()) + ").\n";
  }
  if (!problem_.empty()) return "Values: only what the history determines (" + problem_ + ").\n";
  return {};
}

}  // namespace stub::replay
