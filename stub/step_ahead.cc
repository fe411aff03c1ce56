#include "stub/step_ahead.h"

#include <algorithm>
#include <csignal>
#include <cstring>

#include "protocol/amd64_registers.h"
#include "stub/register_mapping.h"

namespace stub {

namespace {

using protocol::Amd64Reg;

constexpr uint64_t signal_bit(int signal) { return uint64_t{1} << (signal - 1); }

// Signals the kernel raises for the instruction itself (a step's SIGTRAP
// among them). They stay as the program had them: the kernel resets the
// handler of a blocked signal it must force on a thread.
constexpr uint64_t kRaisedByInstructions = signal_bit(SIGSEGV) | signal_bit(SIGBUS) | signal_bit(SIGFPE) |
                                           signal_bit(SIGILL) | signal_bit(SIGTRAP) | signal_bit(SIGSYS);

// A trap at the end of the step: the instruction ran (or a Z1 at the pc
// stopped it first). Either way the register file and the saved bytes
// are all it changed.
bool trap_of_step(const ProcessEvent& event) {
  return event.kind == ProcessEvent::Kind::Stopped && event.signal == SIGTRAP && !event.exec_path &&
         event.fork_child == 0 && !event.vfork_done;
}

// si_code of the signal `tid` stopped with: above 0 when the kernel raised
// it, 0 or below when a process sent it (kill, tgkill, sigqueue).
std::optional<int> signal_code(Process& process, pid_t tid) {
  auto info = process.read_siginfo(tid);
  constexpr std::size_t kCodeOffset = offsetof(siginfo_t, si_code);
  if (!info || info->size() < kCodeOffset + sizeof(int)) return std::nullopt;
  int code = 0;
  std::memcpy(&code, info->data() + kCodeOffset, sizeof code);
  return code;
}

}  // namespace

void StepAhead::run(Process& process, pid_t tid) {
  if (taken_) return;
  if (chances_to_skip_ > 0) {
    --chances_to_skip_;
    return;
  }
  if (!decoder_) {
    auto opened = decoder::InstructionDecoder::create();
    if (!opened) return;
    decoder_.emplace(std::move(*opened));
  }
  if (!shadow_stack_) shadow_stack_ = process.shadow_stack(tid);
  if (*shadow_stack_) return;
  auto before = process.read_registers(tid);
  if (!before) return;
  auto saved = save_footprint(process, *before);
  if (!saved) return;
  auto mask = process.signal_mask(tid);
  if (!mask || !process.set_signal_mask(tid, *mask | ~kRaisedByInstructions)) return;
  if (!process.resume(tid, StepKind::SingleStep, 0)) {
    (void)process.set_signal_mask(tid, *mask);
    return;
  }
  // Blocking is safe: the instruction makes no system call, and its memory
  // is readable, so the step ends at once.
  auto event = process.wait_event();
  if (!event) return;  // nothing to wait for: the process is gone, as the next request finds
  event->pid = process.pid();
  if (event->kind == ProcessEvent::Kind::Stopped) (void)process.set_signal_mask(event->tid, *mask);
  settle(process, tid, std::move(*before), std::move(*saved), *event);
}

void StepAhead::settle(Process& process, pid_t tid, protocol::RegisterFile before, std::vector<SavedBytes> saved,
                       ProcessEvent event) {
  if (event.tid == tid && trap_of_step(event)) {
    taken_ = Taken{tid, std::move(before), std::move(saved), event, false};
    return;
  }
  if (event.tid == tid && event.kind == ProcessEvent::Kind::Stopped) {
    auto code = signal_code(process, tid);
    auto now = process.read_general_registers(tid);
    bool unmoved = now && now->get_u64(Amd64Reg::rip) == before.get_u64(Amd64Reg::rip);
    if (code && *code > 0 && unmoved) {
      taken_ = Taken{tid, std::move(before), {}, event, true};
      return;
    }
  }
  // Sent to the program meanwhile, or its end: the client hears of it on
  // the next resume, whatever that asks for.
  process.keep_pending(event);
}

std::optional<std::vector<StepAhead::SavedBytes>> StepAhead::save_footprint(Process& process,
                                                                            const protocol::RegisterFile& regs) {
  const uint64_t pc = regs.get_u64(Amd64Reg::rip);
  auto code = process.read_memory(pc, decoder::kMaxInstructionSize);
  if (!code) return std::nullopt;
  auto touches = decoder_->footprint(pc, code->data(), code->size(), register_view(regs));
  if (!touches) return std::nullopt;
  std::vector<SavedBytes> saved;
  for (const decoder::MemoryTouch& touch : *touches) {
    // Unreadable memory would fault: that step is left to the client's
    // request, so the program gets its signal in the usual way.
    auto bytes = process.read_memory(touch.address, touch.size);
    if (!bytes || bytes->size() != touch.size) return std::nullopt;
    if (!touch.written) continue;
    if (!privately_writable(process, touch.address, touch.size)) return std::nullopt;
    saved.push_back(SavedBytes{touch.address, std::move(*bytes)});
  }
  return saved;
}

// Looked up again once when the cache has no mapping for the range: the
// stack grows without a system call.
bool StepAhead::privately_writable(Process& process, uint64_t addr, uint64_t len) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (mappings_.empty() || attempt == 1) mappings_ = process.mappings();
    auto holder = std::find_if(mappings_.begin(), mappings_.end(), [&](const MemoryMapping& m) {
      return addr >= m.begin && addr + len <= m.end;
    });
    if (holder != mappings_.end()) return holder->writable && !holder->shared;
  }
  return false;
}

std::optional<ProcessEvent> StepAhead::take(pid_t tid) {
  if (!taken_ || taken_->tid != tid) return std::nullopt;
  ProcessEvent event = taken_->event;
  taken_.reset();
  undone_in_a_row_ = 0;
  return event;
}

void StepAhead::undo(Process& process) {
  if (!taken_) return;
  Taken taken = std::move(*taken_);
  taken_.reset();
  if (++undone_in_a_row_ >= 2) {
    undone_in_a_row_ = 0;
    chances_to_skip_ = kPauseAfterMisses;
  }
  if (taken.faulted) return;  // the next resume discards the signal; the instruction did not run
  (void)process.write_registers(taken.tid, taken.before);
  for (const SavedBytes& saved : taken.saved) (void)process.write_memory(saved.address, saved.bytes);
}

void StepAhead::show_before(uint64_t addr, std::vector<uint8_t>& bytes) const {
  if (!taken_) return;
  for (const SavedBytes& saved : taken_->saved) {
    const uint64_t begin = std::max(addr, saved.address);
    const uint64_t end = std::min(addr + bytes.size(), saved.address + saved.bytes.size());
    for (uint64_t a = begin; a < end; ++a) bytes[a - addr] = saved.bytes[a - saved.address];
  }
}

}  // namespace stub
