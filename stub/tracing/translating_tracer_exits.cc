// TranslatingTracer: stops of a thread in the code cache. The exits the
// translations trap to (drain the log, go on in the cache or hand the
// thread back), and every other stop, which is moved out of the cache
// before anything else sees it.
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "protocol/amd64_registers.h"
#include "stub/tracing/translating_tracer.h"

namespace stub::tracing {

using protocol::Amd64Reg;

namespace {

// Steps towards a clean point: the instrumentation between two clean
// points is a few dozen instructions, so more means something is wrong.
constexpr int kMaxRepairSteps = 256;

// The log's records are read as the trace stores them.
static_assert(sizeof(decoder::StackedBranch) == decoder::kLogRecordSize);
static_assert(offsetof(decoder::StackedBranch, branch.to) == offsetof(decoder::LogRecord, to));
static_assert(offsetof(decoder::StackedBranch, stack.rsp) == offsetof(decoder::LogRecord, rsp));
static_assert(offsetof(decoder::StackedBranch, stack.rbp) == offsetof(decoder::LogRecord, rbp));

// 64 KiB: read and stored while it stays in the core's cache.
constexpr std::size_t kDrainPieceRecords = 2048;

// The slots read at a stop: saved rax and rcx, the cursor, the exit target.
constexpr std::size_t kSlotsRead = 32;

uint64_t u64_at(std::span<const uint8_t> bytes, std::size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

}  // namespace

bool TranslatingTracer::read_slots(TracedThreadControl& control, const Thread& th, Slots& out) {
  std::span<const uint8_t> bytes;
  std::optional<std::vector<uint8_t>> read;
  if (th.area.shared) {
    const uint8_t* slots = th.area.shared->at(th.area.base, kSlotsRead);
    if (slots == nullptr) return false;
    bytes = std::span(slots, kSlotsRead);
  } else {
    auto got = control.read_memory(th.area.base, kSlotsRead);
    if (!got || got->size() < kSlotsRead) return false;
    read = std::move(*got);
    bytes = *read;
  }
  out.saved_rax = u64_at(bytes, decoder::kSlotSavedRax);
  out.saved_rcx = u64_at(bytes, decoder::kSlotSavedRcx);
  out.cursor = static_cast<int64_t>(u64_at(bytes, decoder::kSlotLogCursor));
  out.exit_target = u64_at(bytes, decoder::kSlotExitTarget);
  return true;
}

bool TranslatingTracer::drain(TracedThreadControl& control, pid_t tid, Thread& th, const Slots& slots,
                              uint64_t resume, bool* lost, bool switch_log) {
  if (lost != nullptr) *lost = false;
  const int64_t log_bytes = -empty_cursor(th);
  const int64_t used = log_bytes + slots.cursor;
  if (used < 0 || used > log_bytes || used % static_cast<int64_t>(decoder::kLogRecordSize) != 0) {
    char why[64];
    std::snprintf(why, sizeof why, "a bad log cursor (%lld)", static_cast<long long>(slots.cursor));
    return lose_log(control, tid, th, resume, lost, why);
  }
  bool room = true;
  const uint64_t log_begin = th.area.base - static_cast<uint64_t>(log_bytes);
  const std::size_t records = static_cast<std::size_t>(used) / decoder::kLogRecordSize;
  if (th.area.shared) {
    // In place, in one run: every full chunk of it goes to the trace
    // straight (BlockTrace::append_stacked).
    uint8_t* log = th.area.shared->at(log_begin, static_cast<uint64_t>(used));
    if (log == nullptr) return lose_log(control, tid, th, resume, lost, "a log outside its area");
    const std::span run(reinterpret_cast<const decoder::StackedBranch*>(log), records);
    if (switch_log && !th.others.empty()) {
      // The chunks of the log lent longest ago, encoded meanwhile (mostly
      // done by now), are the trace's own: the thread goes on there while
      // this one's are encoded on the spare CPU. Writing each of a Lua
      // run's logs took the program about as long as encoding it took
      // btstub.
      ptrace_->return_lent_memory(tid, th.others.front().shared.get());
      room = store_run(tid, th, run, th.area.shared);
      th.others.push_back(std::move(th.area));
      th.area = std::move(th.others.front());
      th.others.erase(th.others.begin());
      ++th.switches;
      return reset_cursor(control, tid, th) && room;
    }
    room = store_run(tid, th, run);
    return reset_cursor(control, tid, th) && room;
  }
  // In pieces that stay in the cache between the read and the store: one
  // read of the whole log (3 MiB at the default spacing) into a buffer
  // kept between drains made the kernel's copy an eighth of the tracer's
  // time; a fresh buffer each drain cost its page faults instead.
  drained_.resize(kDrainPieceRecords);
  for (std::size_t at = 0; at < records && room;) {
    const std::span<decoder::StackedBranch> piece = std::span(drained_).first(std::min(kDrainPieceRecords, records - at));
    const std::span<uint8_t> into(reinterpret_cast<uint8_t*>(piece.data()), piece.size_bytes());
    auto got = control.read_memory_into(log_begin + at * decoder::kLogRecordSize, into);
    // Lost from here on (never stored twice): the pieces before it stay.
    if (!got || *got != into.size()) return lose_log(control, tid, th, resume, lost, "a log that cannot be read");
    room = store_run(tid, th, piece);
    at += piece.size();
  }
  return reset_cursor(control, tid, th) && room;
}

bool TranslatingTracer::store_run(pid_t tid, Thread& th, std::span<const decoder::StackedBranch> run,
                                  const std::shared_ptr<const void>& lender) {
  const std::size_t stored = ptrace_->store_lent_branches(tid, run, lender);
  // Only with a CPU of its own: beside the tracer it gains nothing.
  if (const std::vector<int>& spare = ptrace_->packer_placement().cpus; !spare.empty()) heap_prefaulter_.ahead(spare);
  stats_.branches += stored;
  th.logged += stored;
  return stored == run.size();
}

bool TranslatingTracer::lose_log(TracedThreadControl& control, pid_t tid, Thread& th, uint64_t resume, bool* lost,
                                 const char* why) {
  std::fprintf(stderr, "btstub: translated code left %s; its branches since the last drain are lost\n", why);
  if (lost != nullptr) *lost = true;
  ++stats_.lost_logs;
  // What ran between the last branch stored and `resume` is unknown: a gap
  // there, as the hardware backends mark lost trace, so that the history
  // never joins the blocks on either side of the hole.
  // Its stack: as the thread stands now, at `resume` (a record's is from
  // before its branch; a gap's branch is unknown).
  decoder::StackSnapshot stack;
  if (auto regs = control.read_general_registers(tid)) {
    stack = {regs->get_u64(Amd64Reg::rsp), regs->get_u64(Amd64Reg::rbp)};
  }
  const bool stored = ptrace_->store_lent_branch(tid, decoder::kGapAddress, resume, stack);
  // After the gap: the log's fill is judged against the room it left.
  (void)reset_cursor(control, tid, th);
  return stored;
}

bool TranslatingTracer::step_out(TracedThreadControl& control, Thread& th, pid_t tid, uint64_t original,
                                 const ExitTaken::Before* before) {
  protocol::RegisterFile out;
  out.set_u64(Amd64Reg::rip, original);
  if (before != nullptr) {
    out.set_u64(Amd64Reg::rsp, before->rsp);
    if (before->rcx) out.set_u64(Amd64Reg::rcx, *before->rcx);
  }
  out.set_u64(Amd64Reg::gs_base, th.program_gs);
  const bool moved = control.write_registers(tid, out).ok();
  th.in_cache = false;
  th.repair_steps = 0;
  // The ptrace tracer runs the system calls: note_system_call sees those
  // that may change the maps, unless some thread runs untraced.
  if (maps_may_change_unseen()) code_stale_ = true;
  for (int signal : th.deferred) control.resend_signal(tid, signal);
  th.deferred.clear();
  return moved;
}

// A fault of an instruction run in the cache (SIGILL, SIGFPE: the address
// of the instruction; SIGSEGV, SIGBUS: of what it touched) names a cache
// address where the kernel filled si_addr from the pc: the original's
// goes in its place, for the handler and for the client's $_siginfo.
// Signals sent by a process (si_code <= 0) hold a pid there, left alone.
void TranslatingTracer::original_fault_address(TracedThreadControl& control, pid_t tid, int signal) {
  if (signal != SIGILL && signal != SIGFPE && signal != SIGSEGV && signal != SIGBUS) return;
  auto info = control.read_siginfo(tid);
  constexpr std::size_t kCode = offsetof(siginfo_t, si_code);
  constexpr std::size_t kAddr = offsetof(siginfo_t, si_addr);
  if (!info || info->size() < kAddr + 8) return;
  int32_t code = 0;
  uint64_t addr = 0;
  std::memcpy(&code, info->data() + kCode, sizeof code);
  std::memcpy(&addr, info->data() + kAddr, sizeof addr);
  const decoder::Translation* t = code > 0 ? cache_.holding(addr) : nullptr;
  if (t == nullptr) return;
  const uint64_t original = t->original_pc(addr);
  std::memcpy(info->data() + kAddr, &original, sizeof original);
  (void)control.write_siginfo(tid, *info);
}

TraceVerdict TranslatingTracer::leave(TracedThreadControl& control, Thread& th, pid_t tid, uint64_t original,
                                      const TracedStop* stop, const ExitTaken::Before* before) {
  if (stop != nullptr) original_fault_address(control, tid, stop->signal);
  if (!step_out(control, th, tid, original, before)) return TraceVerdict::Report;  // the thread is gone
  if (stop != nullptr) {
    // A stop of the program's (a signal): the ptrace tracer judges it
    // where the original code stands.
    TracedStop outside = *stop;
    outside.pc = original;
    return on_stop(control, outside);
  }
  return ptrace_->take_back(control, tid);
}

std::optional<TranslatingTracer::ExitTaken> TranslatingTracer::take_exit(TracedThreadControl& control, Thread& th,
                                                                         pid_t tid, const TranslationCache::Trap& trap,
                                                                         const protocol::RegisterFile& regs) {
  const decoder::BlockExit& exit = *trap.exit;
  Slots slots;
  if (!read_slots(control, th, slots)) return std::nullopt;
  ExitTaken taken;
  taken.target = exit.kind == decoder::ExitKind::Direct ? exit.target : slots.exit_target;
  switch (exit.kind) {
    case decoder::ExitKind::Direct: ++stats_.direct_exits; break;
    case decoder::ExitKind::Indirect: ++stats_.indirect_exits; break;
    case decoder::ExitKind::LogFull:
      ++stats_.full_exits;
      th.filled_log = true;  // its next log may be larger (kLogBudgetBytes)
      break;
  }
  if (exit.retry) {
    // Nothing taken: the thread stands at the call, registers and stack
    // as the program had them there.
    taken.target = exit.from;
    taken.room = drain(control, tid, th, slots, exit.from, nullptr, true);
    // A trace full under --trace-full=stop left the log no room (its fill
    // 0): the call would come back here at once. Out, the ptrace tracer
    // stops before it.
    if (const auto left = ptrace_->room_for_lent(tid); left && *left == 0) taken.room = false;
    taken.before = ExitTaken::Before{exit.from, regs.get_u64(Amd64Reg::rsp), std::nullopt};
    return taken;
  }
  // The thread stands at `target` now, the branch into it taken. A log
  // lost ends in a gap to `target`, which stands for that branch too.
  bool lost = false;
  taken.room = drain(control, tid, th, slots, taken.target, &lost, true);
  if (taken.room && !lost && exit.kind == decoder::ExitKind::LogFull) {
    const uint64_t rsp = regs.get_u64(Amd64Reg::rsp) + static_cast<uint64_t>(static_cast<int64_t>(exit.rsp_adjust));
    taken.room = ptrace_->store_lent_branch(tid, exit.from, taken.target, {rsp, regs.get_u64(Amd64Reg::rbp)});
    if (taken.room) {
      // The log's fill was judged before this branch took its place.
      taken.room = reset_cursor(control, tid, th);
    } else {
      taken.before = ExitTaken::Before{exit.from, rsp, std::nullopt};
      if (exit.rcx_adjust != 0) {
        taken.before->rcx = regs.get_u64(Amd64Reg::rcx) + static_cast<uint64_t>(static_cast<int64_t>(exit.rcx_adjust));
      }
    }
    stats_.branches += taken.room ? 1 : 0;
    th.logged += taken.room ? 1 : 0;
  }
  return taken;
}

TraceVerdict TranslatingTracer::at_exit(TracedThreadControl& control, Thread& th, pid_t tid,
                                        const TranslationCache::Trap& trap, protocol::RegisterFile& regs) {
  const decoder::BlockExit& exit = *trap.exit;
  const auto taken = take_exit(control, th, tid, trap, regs);
  if (!taken) return leave(control, th, tid, trap.translation->original_pc(regs.get_u64(Amd64Reg::rip) - 1), nullptr);
  const uint64_t target = taken->target;
  const bool room = taken->room;
  // Full (the ptrace tracer reports it), a repair under way, the
  // translations to be dropped once every thread is out, or every thread
  // being stopped (the thread stays stopped, seen; and no memory may be
  // mapped now, which holds the other threads): out here.
  const bool stays = room && th.repair_steps == 0 && th.deferred.empty() && !flush_pending_ && !control.stopping_all();
  if (exit.retry && stays) return resume_in_cache(control, th, tid, target, *trap.translation, exit.retry_offset);
  if (taken->before) return leave(control, th, tid, taken->before->from, nullptr, &*taken->before);
  if (!stays) return leave(control, th, tid, target, nullptr);
  const decoder::Translation* next = translation_and_ahead(control, tid, target);
  if (next == nullptr) {
    ++stats_.exits_to_int3s;
    if (auto refused = refused_.find(target); refused != refused_.end()) ++refusals_[refused->second].exits;
    return leave(control, th, tid, target, nullptr);
  }
  if (flush_pending_) return leave(control, th, tid, target, nullptr);  // translating ahead failed
  const bool alone = !others_in_cache(tid);
  if (alone) apply_links(control);
  if (exit.kind == decoder::ExitKind::Direct) {
    if (auto patch = decoder::link_exit(*trap.translation, trap.exit_index, next->cache_address)) {
      if (!alone) {
        pending_links_[patch->address] = patch->bytes;
      } else if (control.write_tracer_memory(patch->address, patch->bytes)) {
        ++stats_.links;
      }
    }
  } else if (exit.target == 0) {
    enter_indirect(control, th, target, *next);  // an indirect transfer's
  }
  return resume_in_cache(control, th, tid, target, *next, 0);
}

TraceVerdict TranslatingTracer::resume_in_cache(TracedThreadControl& control, Thread& th, pid_t tid,
                                                uint64_t original, const decoder::Translation& t, uint32_t offset) {
  protocol::RegisterFile out;
  uint64_t area_base = th.area.base;
  if (ptrace_->checkpoint_wanted(tid)) {
    // The copy must stand where the original code does.
    out.set_u64(Amd64Reg::rip, original);
    out.set_u64(Amd64Reg::gs_base, th.program_gs);
    if (control.write_registers(tid, out)) (void)ptrace_->lend_thread(control, tid);
    // The checkpoint's waits may have seen the thread end (a SIGKILL meanwhile):
    // then `th` is gone, and its end is what the process layer reports.
    const Thread* still = thread(tid);
    if (still == nullptr) return TraceVerdict::Report;
    area_base = still->area.base;
  }
  if (!populate_area(control, tid)) return TraceVerdict::Report;  // the thread is gone
  out.set_u64(Amd64Reg::rip, t.cache_address + offset);
  out.set_u64(Amd64Reg::gs_base, area_base);
  if (!control.write_registers(tid, out)) return TraceVerdict::Report;
  return TraceVerdict::Continue;
}

TraceVerdict TranslatingTracer::on_cache_stop(TracedThreadControl& control, Thread& th, const TracedStop& stop) {
  const pid_t tid = stop.tid;
  auto regs = control.read_general_registers(tid);
  if (!regs) {
    th.in_cache = false;
    return TraceVerdict::Report;
  }
  const uint64_t pc = regs->get_u64(Amd64Reg::rip);
  if (stop.signal == SIGTRAP) {
    const TranslationCache::Trap trap = cache_.trap_at(pc);
    if (trap.translation != nullptr) return at_exit(control, th, tid, trap, *regs);
  }
  const decoder::Translation* t = cache_.holding(pc);
  if (t == nullptr) {
    // Not in any translation: a bug. Say so, and let the stop be seen.
    std::fprintf(stderr, "btstub: a thread stopped in the code cache outside every translation (0x%llx)\n",
                 static_cast<unsigned long long>(pc));
    th.in_cache = false;
    return ptrace_->on_stop(control, stop);
  }
  const bool repairing = th.repair_steps > 0;
  const bool our_step = repairing && stop.single_stepped && stop.signal == SIGTRAP;
  if (!our_step && stop.signal != 0) {
    // A signal the program got while in the cache.
    const decoder::FaultPoint* fault = t->fault_point_at(pc);
    if (fault != nullptr && stop.signal != SIGTRAP && !repairing) {
      // The fault stopped the branch before it changed anything but the
      // borrowed registers: put them back, and the thread is at the branch.
      Slots slots;
      if (read_slots(control, th, slots)) {
        protocol::RegisterFile back;
        if (fault->rax_saved) back.set_u64(Amd64Reg::rax, slots.saved_rax);
        if (fault->rcx_saved) back.set_u64(Amd64Reg::rcx, slots.saved_rcx);
        if (control.write_registers(tid, back)) {
          if (!drain(control, tid, th, slots, t->original_pc(pc))) {
            return leave(control, th, tid, t->original_pc(pc), nullptr);
          }
          return leave(control, th, tid, t->original_pc(pc), &stop);
        }
      }
    }
    if (t->at_entry(pc) && !repairing) {
      Slots slots;
      if (read_slots(control, th, slots) && !drain(control, tid, th, slots, t->original_pc(pc))) {
        return leave(control, th, tid, t->original_pc(pc), nullptr);  // full: reported as such
      }
      return leave(control, th, tid, t->original_pc(pc), &stop);
    }
    th.deferred.push_back(stop.signal);
  }
  if (t->at_entry(pc)) {
    // A repair done: out, and the signals it held back sent again.
    Slots slots;
    if (read_slots(control, th, slots)) (void)drain(control, tid, th, slots, t->original_pc(pc));
    return leave(control, th, tid, t->original_pc(pc), nullptr);
  }
  // Inside the instrumentation: step on to a clean point.
  if (th.repair_steps == 0) ++stats_.repairs;
  if (++th.repair_steps > kMaxRepairSteps) {
    std::fprintf(stderr, "btstub: no clean point after %d steps in the code cache (0x%llx)\n", kMaxRepairSteps,
                 static_cast<unsigned long long>(pc));
    Slots slots;  // as bring_out does: the log's branches are not lost
    if (read_slots(control, th, slots)) (void)drain(control, tid, th, slots, t->original_pc(pc));
    return leave(control, th, tid, t->original_pc(pc), nullptr);
  }
  return TraceVerdict::SingleStep;
}

}  // namespace stub::tracing
