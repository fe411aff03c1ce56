#include "stub/session/step_ahead.h"

#include <algorithm>
#include <csignal>
#include <cstring>

#include "protocol/amd64_registers.h"
#include "stub/process/register_mapping.h"

namespace stub::session {

using btstub::Expected;
using process::StepKind;
using process::register_view;

namespace {

using protocol::Amd64Reg;

// A trap at the end of the step: the instruction ran (or a Z1 at the pc
// stopped it first). Either way the register file and the saved bytes
// are all it changed.
bool trap_of_step(const ProcessEvent& event) {
  return event.kind == ProcessEvent::Kind::Stopped && event.signal == SIGTRAP &&
         (event.single_stepped || event.hw_stop) && !event.exec_path && event.fork_child == 0 && !event.vfork_done;
}

// The signals an instruction raises. Others can carry a kernel si_code as
// well (an interval timer's SIGALRM is SI_KERNEL) without being a fault.
bool raised_by_instructions(int signal) {
  return signal == SIGSEGV || signal == SIGBUS || signal == SIGFPE || signal == SIGILL || signal == SIGTRAP ||
         signal == SIGSYS;
}

// si_code of a siginfo_t (read_siginfo's bytes): above 0 when the kernel
// raised the signal, 0 or below when a process sent it (kill, tgkill,
// sigqueue).
std::optional<int> signal_code(const std::vector<uint8_t>& info) {
  constexpr std::size_t kCodeOffset = offsetof(siginfo_t, si_code);
  if (info.size() < kCodeOffset + sizeof(int)) return std::nullopt;
  int code = 0;
  std::memcpy(&code, info.data() + kCodeOffset, sizeof code);
  return code;
}

}  // namespace

void StepAhead::run(Process& process, pid_t tid, const std::set<int>& passed) {
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
  // A signal already waiting is the client's next stop (or the program's
  // handler): the next step must be a real one.
  if (auto waiting = process.signal_waiting(tid); !waiting || *waiting) return;
  Taken taken;
  taken.tid = tid;
  auto before = process.read_registers(tid);
  if (!before) return;
  taken.before = std::move(*before);
  auto saved = save_footprint(process, taken.before);
  if (!saved) return;
  taken.saved = std::move(*saved);
  if (auto info = process.read_siginfo(tid)) taken.siginfo = std::move(*info);
  // A step that entered a signal handler stops in a mere notification
  // (si_code SIGTRAP), where the kernel drops a signal the next resume
  // gives (gdb's `signal SIGUSR2` then): undone, a step run ahead would
  // leave the thread in a real trap stop that delivers it.
  if (taken.siginfo && signal_code(*taken.siginfo) == SIGTRAP) return;
  process.set_pass_signals({});
  auto resumed = process.resume(tid, StepKind::SingleStep, 0);
  // Blocking is safe: the instruction makes no system call, and its memory
  // is mapped for it, so the step ends at once (or a signal stops it first).
  auto event = resumed ? process.wait_event() : Expected<ProcessEvent>(resumed.error());
  process.set_pass_signals(passed);
  if (!event) return;  // nothing ran, or the process is gone, as the next request finds
  event->pid = process.pid();
  taken.event = *event;
  settle(process, std::move(taken), passed);
}

void StepAhead::settle(Process& process, Taken taken, const std::set<int>& passed) {
  const ProcessEvent& event = taken.event;
  if (event.tid == taken.tid && trap_of_step(event)) {
    taken_ = std::move(taken);
    return;
  }
  // The signal's own siginfo: to tell a fault, and kept with the signal.
  std::vector<uint8_t> kept_siginfo;
  if (event.kind == ProcessEvent::Kind::Stopped) {
    if (auto info = process.read_siginfo(event.tid)) kept_siginfo = std::move(*info);
  }
  if (event.tid == taken.tid && event.kind == ProcessEvent::Kind::Stopped) {
    auto code = signal_code(kept_siginfo);
    auto now = process.read_general_registers(taken.tid);
    bool unmoved = now && now->get_u64(Amd64Reg::rip) == taken.before.get_u64(Amd64Reg::rip);
    if (raised_by_instructions(event.signal) && code && *code > 0 && unmoved) {
      // Its own fault. The client's step finds it again; one the client
      // passes is the program's to handle then, with the process's help.
      if (passed.count(event.signal) != 0) {
        if (taken.siginfo) (void)process.write_siginfo(taken.tid, *taken.siginfo);
        return;
      }
      taken.saved.clear();
      taken.faulted = true;
      taken_ = std::move(taken);
      return;
    }
  }
  // A signal that was pending or came meanwhile (it stops the thread before
  // the instruction runs), or the program's end: the client hears of it on
  // the next resume, whatever that asks for, as without the step ahead.
  process.keep_pending(event, kept_siginfo);
  // Until then $_siginfo is the last stop's.
  if (event.kind == ProcessEvent::Kind::Stopped && taken.siginfo) (void)process.write_siginfo(taken.tid, *taken.siginfo);
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
    // Memory the program may not touch would fault: that step is left to
    // the client's request, so the program gets its signal in the usual way.
    const MemoryMapping* holder = mapping_of(process, touch.address, touch.size);
    if (holder == nullptr || !holder->readable) return std::nullopt;
    if (touch.written && (!holder->writable || holder->shared)) return std::nullopt;
    auto bytes = process.read_memory(touch.address, touch.size);
    if (!bytes || bytes->size() != touch.size) return std::nullopt;
    if (touch.written) saved.push_back(SavedBytes{touch.address, std::move(*bytes)});
  }
  return saved;
}

// Looked up again once when the cache has no mapping for the range: the
// stack grows without a system call.
const MemoryMapping* StepAhead::mapping_of(Process& process, uint64_t addr, uint64_t len) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (mappings_.empty() || attempt == 1) mappings_ = process.mappings();
    auto holder = std::find_if(mappings_.begin(), mappings_.end(), [&](const MemoryMapping& m) {
      return addr >= m.begin && addr + len <= m.end;
    });
    if (holder != mappings_.end()) return &*holder;
  }
  return nullptr;
}

std::optional<ProcessEvent> StepAhead::take(Process& process, pid_t tid) {
  if (!taken_ || taken_->tid != tid) return std::nullopt;
  auto waiting = process.signal_waiting(tid);
  if (!waiting) {  // no longer stopped: killed meanwhile
    taken_.reset();
    return std::nullopt;
  }
  // Sent while the client looked at the last stop: the client's step must
  // meet it before any instruction runs, so this one is undone.
  if (*waiting) return std::nullopt;
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
  if (taken.siginfo) (void)process.write_siginfo(taken.tid, *taken.siginfo);
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

}  // namespace stub::session
