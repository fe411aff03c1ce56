// Running a copy of the program (process_copy.h) forward along the recorded
// path to the n-th visit of an instruction.
//
// Where it can, run_to lets the copy count the visits itself and stop once
// (ptrace_copy_counting.cc), also with watches armed (each hit a stop).
// Otherwise (few visits, code that cannot be moved) it stops the copy at
// every visit of the target pc, up to a checkpoint's worth of visits. An
// execute breakpoint in a debug register stops there once per visit and
// writes no memory: before an execute breakpoint's instruction the
// kernel sets RF in the flags it returns with (hw_breakpoint_handler in
// arch/x86/kernel/hw_breakpoint.c), so the next resume runs that instruction
// instead of trapping again. An int3 costs two stops and four memory writes
// per visit (stop after it, restore the byte, rewind, step, put it back):
// the fallback when the past watches hold all four debug registers, and
// where debug registers never trap (some hypervisors accept the writes and
// ignore them: PtraceProcess::debug_registers_work).
#include <sys/ptrace.h>
#include <sys/user.h>

#include <unordered_map>

#include "stub/process/process_copy.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

// rep movs/stos/lods/cmps/scas: a single step runs one iteration and leaves
// the pc where it was, which is not a new visit.
bool ProcessCopy::at_repeated_string_instruction(uint64_t pc) {
  auto bytes = read_memory(pc, 15);
  if (!bytes) return false;
  bool rep = false;
  for (uint8_t b : *bytes) {
    if (b == 0xf2 || b == 0xf3) {
      rep = true;
      continue;
    }
    if (b == 0x66 || b == 0x67 || b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36 || b == 0x64 || b == 0x65 ||
        (b >= 0x40 && b <= 0x4f)) {
      continue;
    }
    return rep && ((b >= 0xa4 && b <= 0xa7) || (b >= 0xaa && b <= 0xaf));
  }
  return false;
}

Expected<void> ProcessCopy::run_to(uint64_t target, uint64_t hits, const EntryCheck& enters) {
  auto ran = run_to_counting(target, hits, enters);
  if (!ran) return ran.error();
  return {};
}

Expected<uint64_t> ProcessCopy::run_to_counting(uint64_t target, uint64_t hits, const EntryCheck& enters) {
  if (!usable_) return make_error(ErrorCode::Internal, "The copy is unusable");
  if (auto ready = ready_to_run(); !ready) return ready.error();
  if (hits == 0) return make_error(ErrorCode::InvalidArgument, "No visit to run to");
  if (enters && hits >= kCountingMinHits) {
    auto counted = run_by_counting(target, hits, enters);
    if (!counted) return counted.error();
    if (*counted) return **counted;
  }
  auto original = read_memory(target, 1);
  if (!original) return make_error(ErrorCode::MemoryFault, "No code at " + hex(target) + " in the copy");
  const bool repeats = at_repeated_string_instruction(target);
  auto breakpoint = set_breakpoint(target);
  if (!breakpoint) {
    usable_ = false;
    return breakpoint.error();
  }
  if (!*breakpoint) return run_by_int3(target, hits, repeats, original->front());
  auto ran = run_by_breakpoint(target, hits, repeats);
  if (auto cleared = clear_breakpoint(); !cleared && ran) {
    usable_ = false;
    return cleared.error();
  }
  return ran;
}

Expected<bool> ProcessCopy::set_breakpoint(uint64_t pc) {
  if (!PtraceProcess::debug_registers_work()) return false;
  DebugRegisterState with = armed_;
  if (!with.insert(WatchKind::Execute, pc, 1)) return false;
  int slot = 0;
  while (armed_.in_use(slot) || !with.in_use(slot)) ++slot;
  if (auto r = poke_debugreg(pid_, slot, pc); !r) return r.error();
  breakpoint_slot_ = slot;
  breakpoint_dr7_ = with.dr7();
  if (auto r = enable_breakpoint(true); !r) return r.error();
  return true;
}

Expected<void> ProcessCopy::enable_breakpoint(bool on) {
  breakpoint_on_ = on;
  return poke_debugreg(pid_, 7, on ? breakpoint_dr7_ : armed_.dr7());
}

Expected<void> ProcessCopy::clear_breakpoint() {
  auto off = enable_breakpoint(false);
  breakpoint_slot_.reset();
  return off;
}

// The program never had RF set there; its registers must read as it had
// them (and the copy's next run starts by stepping past the instruction).
Expected<void> ProcessCopy::clear_resume_flag() {
  constexpr uint64_t kResumeFlag = uint64_t{1} << 16;
  user_regs_struct regs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, pid_, 0, &regs); !r) return r.error();
  regs.eflags &= ~kResumeFlag;
  if (auto r = do_ptrace(PTRACE_SETREGS, pid_, 0, &regs); !r) return r.error();
  return {};
}

Expected<uint64_t> ProcessCopy::step_over(uint64_t target, bool repeats) {
  uint64_t watch_hits = 0;
  for (;;) {
    auto stop = resume_and_wait(true);
    if (!stop) return stop.error();
    watch_hits += stop->watch_hits.size();
    auto at = pc();
    if (!at) return at.error();
    if (!(repeats && *at == target)) return watch_hits;
  }
}

Expected<uint64_t> ProcessCopy::step_past(uint64_t target, bool repeats) {
  // The breakpoint would stop the step before the instruction (and every
  // iteration of a repeated one).
  if (auto r = enable_breakpoint(false); !r) return r.error();
  auto stepped = step_over(target, repeats);
  if (!stepped) return stepped;
  if (auto r = enable_breakpoint(true); !r) return r.error();
  return stepped;
}

Expected<uint64_t> ProcessCopy::run_by_breakpoint(uint64_t target, uint64_t hits, bool repeats) {
  uint64_t watch_hits = 0;
  // Stopped by the breakpoint: RF is set, and a resume runs the instruction.
  bool resumes_past = false;
  for (;;) {
    // At the breakpoint the pc is known: a register read less per visit.
    auto at = resumes_past ? Expected<uint64_t>(target) : pc();
    if (!at) return at.error();
    if (*at == target) {
      if (--hits == 0) {
        if (resumes_past) {
          if (auto r = clear_resume_flag(); !r) return r.error();
        }
        return watch_hits;
      }
      if (repeats || !resumes_past) {
        auto stepped = step_past(target, repeats);
        if (!stepped) return stepped.error();
        watch_hits += *stepped;
        resumes_past = false;
        continue;
      }
    }
    auto stop = resume_and_wait(false);
    if (!stop) return stop.error();
    watch_hits += stop->watch_hits.size();
    resumes_past = stop->at_breakpoint;
    if (stop->at_breakpoint || !stop->watch_hits.empty()) continue;
    usable_ = false;
    auto now = pc();
    return make_error(ErrorCode::Internal, "The copy stopped at " + hex(now ? *now : 0) + " on its way to " +
                                               hex(target));
  }
}

Expected<uint64_t> ProcessCopy::run_by_int3(uint64_t target, uint64_t hits, bool repeats, uint8_t original) {
  uint64_t watch_hits = 0;
  for (;;) {
    auto at = pc();
    if (!at) return at.error();
    if (*at == target) {
      if (--hits == 0) return watch_hits;
      auto stepped = step_over(target, repeats);
      if (!stepped) return stepped;
      watch_hits += *stepped;
      continue;
    }
    if (!write_memory(target, {kInt3})) {
      usable_ = false;
      return make_error(ErrorCode::MemoryFault, "Cannot put a breakpoint in the copy at " + hex(target));
    }
    auto stop = resume_and_wait(false);
    (void)write_memory(target, {original});
    if (!stop) return stop.error();
    at = pc();
    if (!at) return at.error();
    if (!stop->watch_hits.empty()) {  // after the instruction that touched a watch
      watch_hits += stop->watch_hits.size();
      continue;
    }
    if (*at != target + 1) {
      usable_ = false;
      return make_error(ErrorCode::Internal, "The copy stopped at " + hex(*at) + " on its way to " + hex(target));
    }
    if (auto r = set_pc(target); !r) return r.error();
  }
}

Expected<std::vector<ProcessCopy::WatchHit>> ProcessCopy::step_to(uint64_t target, uint64_t hits) {
  if (!usable_) return make_error(ErrorCode::Internal, "The copy is unusable");
  if (auto ready = ready_to_run(); !ready) return ready.error();
  std::vector<WatchHit> out;
  std::unordered_map<uint64_t, uint64_t> visits;
  std::unordered_map<uint64_t, bool> repeats;
  auto at = pc();
  if (!at) return at.error();
  ++visits[*at];
  // Bounded: a stretch between checkpoints is a few thousand branches.
  for (uint64_t steps = 0; steps < (uint64_t{1} << 26); ++steps) {
    if (*at == target && visits[target] == hits) return out;
    if (visits[target] > hits) break;
    auto stop = resume_and_wait(true);
    if (!stop) return stop.error();
    for (const DebugHit& hit : stop->watch_hits) out.push_back(WatchHit{*at, visits[*at], hit});
    auto next = pc();
    if (!next) return next.error();
    auto rep = repeats.find(*at);
    if (rep == repeats.end()) rep = repeats.emplace(*at, at_repeated_string_instruction(*at)).first;
    if (!(*next == *at && rep->second)) ++visits[*next];
    at = next;
  }
  usable_ = false;
  return make_error(ErrorCode::Internal, "The copy did not arrive at " + hex(target));
}

}  // namespace stub::process
