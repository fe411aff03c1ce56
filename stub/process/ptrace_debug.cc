// Debug registers (user Z1-Z4 in slots 0-3, the tracer's trace stop in slot
// 3), the tracer's int3 trace stops, the trace hook's view of a thread, and
// per-thread /proc facts.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {
namespace {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

constexpr int kTraceSlot = 3;
constexpr uint64_t kDr6Step = uint64_t{1} << 14;
constexpr uint64_t kDr7SlotMask = (uint64_t{3} << (2 * kTraceSlot)) | (uint64_t{0xf} << (16 + 4 * kTraceSlot));

}  // namespace

uint64_t ptrace_detail::debugreg_offset(int n) {
  return offsetof(struct user, u_debugreg) + sizeof(long) * static_cast<uint64_t>(n);
}

Expected<void> ptrace_detail::poke_debugreg(pid_t tid, int n, uint64_t value) {
  auto r = do_ptrace(PTRACE_POKEUSER, tid, debugreg_offset(n), reinterpret_cast<void*>(value));
  if (!r) return r.error();
  return {};
}

namespace {

// The probe's child: stops for its parent, then runs the probed function.
__attribute__((noinline)) void probe_target() { asm volatile("nop"); }

[[noreturn]] void run_probe_child() {
  if (!do_ptrace(PTRACE_TRACEME, 0, 0, nullptr)) ::_exit(2);
  ::raise(SIGSTOP);
  probe_target();
  ::_exit(0);
}

// Arms DR0 on probe_target in a forked child and sees whether it fires.
bool probe_debug_registers() {
  pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) run_probe_child();
  int status = 0;
  bool fired = false;
  if (wait_retry(child, &status, 0) == child && WIFSTOPPED(status)) {
    auto addr = reinterpret_cast<uint64_t>(&probe_target);
    bool armed = poke_debugreg(child, 0, addr).ok() && poke_debugreg(child, 7, 1).ok();
    if (armed && do_ptrace(PTRACE_CONT, child, 0, nullptr)) {
      fired = wait_retry(child, &status, 0) == child && WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP;
    }
  }
  ::kill(child, SIGKILL);
  while (wait_retry(child, &status, 0) == child && !WIFEXITED(status) && !WIFSIGNALED(status)) {
  }
  return fired;
}

}  // namespace

bool PtraceProcess::debug_registers_work() {
  // Some hypervisors accept debug-register writes and never trap on them.
  static const bool works = probe_debug_registers();
  return works;
}

void PtraceProcess::set_trace_hook(TraceHook* hook) {
  hook_ = hook;
  if (hook_ != nullptr) return;
  for (auto& [tid, thread] : threads_) thread.trace_stop.reset();
  sync_all_debug_regs();
  remove_all_trace_int3s();
}

// --- The tracer's int3s --------------------------------------------------------

Expected<void> PtraceProcess::set_trace_breakpoint(pid_t tid, std::optional<uint64_t> addr) {
  std::vector<uint64_t> addrs;
  if (addr) addrs.push_back(*addr);
  return set_trace_breakpoints(tid, addrs);
}

Expected<void> PtraceProcess::set_trace_breakpoints(pid_t tid, const std::vector<uint64_t>& addrs) {
  auto found = threads_.find(tid);
  if (!alive_ || found == threads_.end()) return make_error(ErrorCode::NoProcess, "No thread " + std::to_string(tid));
  ThreadState& thread = found->second;
  if (thread.trace_int3s == addrs) return {};
  // New references first, so an int3 both settings share is never lifted.
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    if (auto r = add_trace_int3(addrs[i]); !r) {
      for (std::size_t j = 0; j < i; ++j) drop_trace_int3(addrs[j]);
      return r;  // the old setting stays
    }
  }
  for (uint64_t old : thread.trace_int3s) drop_trace_int3(old);
  thread.trace_int3s = addrs;
  return {};
}

std::shared_ptr<const ProgramBytes> PtraceProcess::inserted_int3s() const {
  // Checkpoints come often and the int3s seldom change between them: one
  // list serves them all (thousands of int3s under --record), made again
  // only when either map changed.
  const std::pair<uint64_t, uint64_t> changes{breakpoints_.changes(), trace_int3s_.changes()};
  if (last_inserted_int3s_ && last_inserted_changes_ == changes) return last_inserted_int3s_;
  std::map<uint64_t, uint8_t> all = breakpoints_.get();
  for (const auto& [addr, int3] : trace_int3s_) all[addr] = int3.original;
  ProgramBytes bytes(all.begin(), all.end());
  if (!last_inserted_int3s_ || *last_inserted_int3s_ != bytes) {
    last_inserted_int3s_ = std::make_shared<const ProgramBytes>(std::move(bytes));
  }
  last_inserted_changes_ = changes;
  return last_inserted_int3s_;
}

Expected<void> PtraceProcess::add_trace_int3(uint64_t addr) {
  if (auto it = trace_int3s_.find(addr); it != trace_int3s_.end()) {
    ++it->second.refs;
    return {};
  }
  uint8_t original = 0;
  if (auto user = breakpoints_.find(addr); user != breakpoints_.end()) {
    original = user->second;  // the int3 is already there
  } else {
    std::vector<uint8_t> byte = raw_read(addr, 1);
    if (byte.empty()) return make_error(ErrorCode::MemoryFault, "Cannot insert trace stop at " + hex(addr));
    original = byte[0];
    // Not while a vfork child has the memory: it goes in at the vforkdone.
    if (vfork_parent_ == 0) {
      if (auto r = raw_write(addr, {kInt3}); !r) return r;
    }
  }
  trace_int3s_.edit()[addr] = TraceInt3{original, 1};
  retired_int3s_.insert(addr);
  return {};
}

void PtraceProcess::drop_trace_int3(uint64_t addr) {
  auto it = trace_int3s_.find(addr);
  if (it == trace_int3s_.end() || it->second.refs == 0 || --it->second.refs > 0) return;
  if (it->second.lift_on_drop) return lift_trace_int3(addr);
  if (keep_trace_int3s_) return;
  const uint8_t original = it->second.original;
  trace_int3s_.edit().erase(it);
  if (breakpoints_.count(addr) == 0 && alive_) (void)raw_write(addr, {original});
}

void PtraceProcess::code_changed(uint64_t begin, uint64_t end) {
  if (!alive_ || vfork_parent_ != 0) return;  // a vfork child's int3s go in at the vforkdone
  std::vector<std::pair<uint64_t, uint8_t>> overwritten;
  std::vector<uint64_t> gone;
  for (auto it = trace_int3s_.lower_bound(begin); it != trace_int3s_.end() && it->first < end; ++it) {
    if (breakpoints_.count(it->first) != 0) continue;  // gdb's own int3 (and original) there
    std::vector<uint8_t> byte = raw_read(it->first, 1);
    if (!byte.empty() && byte[0] == kInt3) continue;
    // A kept int3 no thread waits at, over code that changed or went
    // (munmap, then perhaps another library mapped there: dlclose and
    // dlopen) is forgotten: written again it could land inside one of
    // the new code's instructions. The tracer plans from the new code
    // and puts in the int3s it needs.
    if (it->second.refs == 0) {
      gone.push_back(it->first);
    } else if (!byte.empty()) {
      overwritten.emplace_back(it->first, byte[0]);
    }
  }
  for (uint64_t addr : gone) trace_int3s_.edit().erase(addr);
  for (const auto& [addr, byte] : overwritten) {
    trace_int3s_.edit()[addr].original = byte;
    (void)raw_write(addr, {kInt3});
  }
}

void PtraceProcess::lift_trace_breakpoints(uint64_t begin, uint64_t end) {
  std::vector<uint64_t> lifted;
  for (auto it = trace_int3s_.lower_bound(begin); it != trace_int3s_.end() && it->first < end; ++it) {
    if (it->second.refs == 0) {
      lifted.push_back(it->first);
    } else if (!it->second.lift_on_drop) {
      trace_int3s_.edit()[it->first].lift_on_drop = true;
    }
  }
  for (uint64_t addr : lifted) lift_trace_int3(addr);
}

void PtraceProcess::lift_trace_int3(uint64_t addr) {
  auto it = trace_int3s_.find(addr);
  if (it == trace_int3s_.end()) return;
  const uint8_t original = it->second.original;
  trace_int3s_.edit().erase(it);
  if (breakpoints_.count(addr) != 0 || !alive_ || vfork_parent_ != 0) return;
  const std::vector<uint8_t> byte = raw_read(addr, 1);
  if (!byte.empty() && byte[0] == kInt3) (void)raw_write(addr, {original});
}

void PtraceProcess::keep_trace_breakpoints(bool keep) {
  if (keep_trace_int3s_ == keep) return;
  keep_trace_int3s_ = keep;
  if (keep) return;
  auto& int3s = trace_int3s_.edit();
  for (auto it = int3s.begin(); it != int3s.end();) {
    if (it->second.refs > 0) {
      ++it;
      continue;
    }
    if (breakpoints_.count(it->first) == 0 && alive_) (void)raw_write(it->first, {it->second.original});
    it = int3s.erase(it);
  }
}

void PtraceProcess::release_trace_int3(pid_t tid) {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return;
  for (uint64_t addr : found->second.trace_int3s) drop_trace_int3(addr);
  found->second.trace_int3s.clear();
}

void PtraceProcess::remove_all_trace_int3s() {
  for (const auto& [addr, int3] : trace_int3s_) {
    if (breakpoints_.count(addr) == 0 && alive_) (void)raw_write(addr, {int3.original});
  }
  trace_int3s_.edit().clear();
  for (auto& [tid, thread] : threads_) thread.trace_int3s.clear();
}

// A trap just after an address whose tracer int3 is gone: the thread hit it
// before it was removed. (A program's own int3 is never a trace stop: only
// emulable control transfers get one.)
bool PtraceProcess::was_trace_int3(uint64_t addr) {
  if (retired_int3s_.count(addr) == 0) return false;
  std::vector<uint8_t> byte = raw_read(addr, 1);
  return !byte.empty() && byte[0] != kInt3;
}

Expected<void> PtraceProcess::set_trace_stop(pid_t tid, std::optional<uint64_t> addr) {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return make_error(ErrorCode::NoProcess, "No thread " + std::to_string(tid));
  if (found->second.running) {
    return make_error(ErrorCode::InvalidArgument, "Thread " + std::to_string(tid) + " is running");
  }
  if (addr && user_debug_.in_use(kTraceSlot)) {
    return make_error(ErrorCode::NotSupported, "Debug register 3 is taken by a hardware watchpoint");
  }
  found->second.trace_stop = addr;
  return sync_debug_regs(tid, found->second);
}

PtraceProcess::DebugRegs PtraceProcess::wanted_debug_regs(const ThreadState& thread) const {
  DebugRegs regs;
  for (int i = 0; i < DebugRegisterState::kSlotCount; ++i) regs.address[i] = user_debug_.address(i);
  regs.dr7 = user_debug_.dr7();
  if (thread.trace_stop) {
    // Local enable, execute condition, length 1 (R/W and LEN both zero).
    regs.address[kTraceSlot] = *thread.trace_stop;
    regs.dr7 = (regs.dr7 & ~kDr7SlotMask) | (uint64_t{1} << (2 * kTraceSlot));
  }
  return regs;
}

// Writes only what differs from the thread's registers: each write is a
// system call, and this runs before every resume.
Expected<void> PtraceProcess::sync_debug_regs(pid_t tid, ThreadState& thread) {
  DebugRegs want = wanted_debug_regs(thread);
  if (want.address == thread.written.address && want.dr7 == thread.written.dr7) return {};
  if (thread.written.dr7 != 0 && want.address != thread.written.address) {
    // Disable first: an address may only change under a valid DR7.
    if (auto r = poke_debugreg(tid, 7, 0); !r) return r;
    thread.written.dr7 = 0;
  }
  for (int i = 0; i < DebugRegisterState::kSlotCount; ++i) {
    if (want.address[i] == thread.written.address[i]) continue;
    if (auto r = poke_debugreg(tid, i, want.address[i]); !r) return r;
    thread.written.address[i] = want.address[i];
  }
  if (want.dr7 != thread.written.dr7) {
    if (auto r = poke_debugreg(tid, 7, want.dr7); !r) return r;
    thread.written.dr7 = want.dr7;
  }
  return {};
}

void PtraceProcess::sync_all_debug_regs() {
  for (auto& [tid, thread] : threads_) {
    if (!thread.running) (void)sync_debug_regs(tid, thread);  // running ones sync when started
  }
}

uint64_t PtraceProcess::take_dr6(pid_t tid, const ThreadState& thread) {
  if (thread.written.dr7 == 0) return 0;  // nothing armed: the trap is no debug-register hit
  auto dr6 = do_ptrace(PTRACE_PEEKUSER, tid, debugreg_offset(6), nullptr);
  if (!dr6) return 0;
  uint64_t value = static_cast<uint64_t>(*dr6);
  if ((value & (0xf | kDr6Step)) != 0) (void)poke_debugreg(tid, 6, 0);
  return value;
}

TracedStop PtraceProcess::traced_stop(pid_t tid, const ProcessEvent& event, bool trace_hit) const {
  TracedStop stop;
  stop.tid = tid;
  stop.signal = event.signal;
  stop.trace_stop_hit = trace_hit;
  stop.single_stepped = event.single_stepped;
  stop.software_breakpoint = event.software_breakpoint;
  stop.watchpoint_hit = event.hw_stop.has_value();
  user_regs_struct gregs{};
  if (do_ptrace(PTRACE_GETREGS, tid, 0, &gregs)) stop.pc = gregs.rip;
  return stop;
}

Expected<void> PtraceProcess::insert_hw_point(protocol::BreakpointType type, uint64_t addr, uint64_t len) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  auto kind = watch_kind_for(type);
  if (!kind) return make_error(ErrorCode::InvalidArgument, "Not a hardware breakpoint type");
  if (!debug_registers_work()) {
    return make_error(ErrorCode::NotSupported, "Debug registers do not trap on this machine");
  }
  DebugRegisterState next = user_debug_;
  if (auto r = next.insert(*kind, addr, len); !r) return r;
  bool tracer_slot_busy = (hook_ != nullptr && hook_->uses_debug_register()) ||
                          std::any_of(threads_.begin(), threads_.end(),
                                      [](const auto& e) { return e.second.trace_stop.has_value(); });
  if (tracer_slot_busy && next.in_use(kTraceSlot)) {
    return make_error(ErrorCode::NotSupported,
                      "No free debug register: 3 are usable while branch tracing holds the fourth");
  }
  DebugRegisterState before = user_debug_;
  user_debug_ = next;
  for (auto& [tid, thread] : threads_) {
    if (thread.running) continue;
    if (auto r = sync_debug_regs(tid, thread); !r) {
      user_debug_ = before;
      sync_all_debug_regs();
      return make_error(r.error().code, "Cannot set debug registers: " + r.error().message);
    }
  }
  return {};
}

Expected<void> PtraceProcess::remove_hw_point(protocol::BreakpointType type, uint64_t addr, uint64_t len) {
  auto kind = watch_kind_for(type);
  if (!kind) return make_error(ErrorCode::InvalidArgument, "Not a hardware breakpoint type");
  if (auto r = user_debug_.remove(*kind, addr, len); !r) return r;
  sync_all_debug_regs();
  return {};
}

std::string PtraceProcess::thread_name(pid_t tid) const {
  std::ifstream comm("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

int PtraceProcess::thread_core(pid_t tid) const {
  constexpr std::size_t kProcessor = 39 - 3;  // field 39, "processor"
  auto fields = thread_stat_fields(pid_, tid);
  return fields.size() > kProcessor ? std::atoi(fields[kProcessor].c_str()) : -1;
}

// The siginfo requests and PTRACE_PEEKSIGINFO need a thread in a ptrace stop.
Expected<void> PtraceProcess::require_stopped(pid_t tid) const {
  auto found = threads_.find(tid);
  if (!alive_ || found == threads_.end()) return make_error(ErrorCode::NoProcess, "No thread " + std::to_string(tid));
  if (found->second.running) return make_error(ErrorCode::InvalidArgument, "Thread is running");
  return {};
}

Expected<std::vector<uint8_t>> PtraceProcess::read_siginfo(pid_t tid) {
  if (auto stopped = require_stopped(tid); !stopped) return stopped.error();
  siginfo_t info{};
  if (ending_) {
    // The held end is reported as SIGKILL ($_siginfo says so too), not as
    // the exit stop it really is.
    info.si_signo = SIGKILL;
    info.si_code = SI_KERNEL;
  } else if (auto r = do_ptrace(PTRACE_GETSIGINFO, tid, 0, &info); !r) {
    return r.error();
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(&info);
  return std::vector<uint8_t>(bytes, bytes + sizeof info);
}

Expected<void> PtraceProcess::write_siginfo(pid_t tid, const std::vector<uint8_t>& bytes) {
  if (auto stopped = require_stopped(tid); !stopped) return stopped.error();
  siginfo_t info{};
  if (bytes.size() != sizeof info) return make_error(ErrorCode::InvalidArgument, "Bad siginfo size");
  std::memcpy(&info, bytes.data(), sizeof info);
  if (auto r = do_ptrace(PTRACE_SETSIGINFO, tid, 0, &info); !r) return r.error();
  return {};
}

Expected<bool> PtraceProcess::signal_waiting(pid_t tid) {
  if (auto stopped = require_stopped(tid); !stopped) return stopped.error();
  if (threads_.at(tid).owed_signal != 0) return true;  // owe_signal: goes with the next start
  for (uint32_t flags : {0u, static_cast<uint32_t>(PTRACE_PEEKSIGINFO_SHARED)}) {
    __ptrace_peeksiginfo_args args{0, flags, 1};
    siginfo_t info{};
    auto r = do_ptrace(PTRACE_PEEKSIGINFO, tid, reinterpret_cast<uint64_t>(&args), &info);
    if (!r) return r.error();
    if (*r > 0) return true;
  }
  return false;
}

// --- Running past the tracer's int3s -----------------------------------------

pid_t PtraceProcess::reap(pid_t want, int* status, int flags) {
  for (auto it = replay_.begin(); it != replay_.end(); ++it) {
    if (want != -1 && it->first != want) continue;
    const pid_t tid = it->first;
    *status = it->second;
    replay_.erase(it);
    return tid;
  }
  WaitRoutes& routes = WaitRoutes::instance();
  if (auto handed = routes.take_handed(this, want)) {
    *status = handed->second;
    return handed->first;
  }
  for (;;) {
    pid_t tid = wait_retry(want, status, flags);
    if (tid <= 0 || want != -1) return tid;
    // A wait for any tracee also reaps other debugged processes' threads.
    WaitOwner* owner = routes.owner_of(tid);
    if (owner == nullptr || owner == this) return tid;
    routes.hand_over(owner, tid, *status);
  }
}

bool PtraceProcess::in_replay(pid_t tid) const {
  return std::any_of(replay_.begin(), replay_.end(), [tid](const auto& r) { return r.first == tid; });
}

// An untraced thread (or one the tracer let go) on a tracer int3: the hook
// emulates the transfer for it, or the real instruction is stepped with the
// other threads held. True when the stop is dealt with.
bool PtraceProcess::pass_untraced_trace_hit(pid_t tid, ThreadState& thread, uint64_t pc) {
  if (trace_int3s_.count(pc) == 0) {
    // Hit just before the int3 went away: the real instruction is back.
    if (!stopping_all_) (void)raw_resume(tid, thread, thread.last_kind, 0);
    return true;
  }
  if (hook_ != nullptr && hook_->pass_trace_breakpoint(*this, tid)) {
    thread.pc_moved_unrun = true;  // if kept stopped: see start_thread
    if (!stopping_all_) (void)raw_resume(tid, thread, thread.last_kind, 0);
    return true;
  }
  if (stopping_all_) return true;  // stays on the int3; it meets it again when resumed
  // The step's completion comes back as a bare step of a continue: resumed.
  return step_held(tid, thread, pc, 0).ok();
}

// Holds (SIGSTOP) every other running thread of the program, for a moment
// in which `tid` does something no other thread may run through: the
// threads held, to be let go by release_held. Statuses reaped from them
// that were not our SIGSTOP are replayed later (reap).
std::vector<pid_t> PtraceProcess::hold_others(pid_t tid) {
  // Statuses another debugged process reaped for our threads count as in
  // hand too: waiting for such a thread's stop would block for good.
  while (auto handed = WaitRoutes::instance().take_handed(this, -1)) replay_.push_back(*handed);
  std::vector<pid_t> held;
  for (auto& [other, state] : threads_) {
    if (other == tid || !state.running) continue;
    const bool in_hand = in_replay(other);
    // A SIGSTOP still owed from an all-stop holds it as well as a new one
    // would; a second could be left over, unabsorbed (stop_all_threads).
    const bool owed = state.sigstop_expected;
    if (in_hand || (!owed && ::syscall(SYS_tgkill, pid_, other, SIGSTOP) != 0)) continue;
    int status = 0;
    pid_t reaped = wait_for_stop(other, &status);
    if (reaped == 0) leader_exited();
    if (reaped != other) continue;
    if (WIFSTOPPED(status) && (status >> 16) == 0 && WSTOPSIG(status) == SIGSTOP) {
      if (state.stop_requested) {
        // Non-stop: the client's vCont;t of that thread, answered when
        // the status is replayed (sigstop_expected stays for it).
        replay_.emplace_back(other, status);
        continue;
      }
      state.sigstop_expected = false;
      held.push_back(other);
      continue;
    }
    state.sigstop_expected = !(WIFEXITED(status) || WIFSIGNALED(status));  // ours is still queued
    replay_.emplace_back(other, status);
  }
  return held;
}

// The threads hold_others held go on as they were going, unseen by the
// tracer (nothing of theirs changed).
void PtraceProcess::release_held(const std::vector<pid_t>& held) {
  for (pid_t other : held) {
    const bool step = threads_[other].last_kind == StepKind::SingleStep;
    (void)do_ptrace(step ? PTRACE_SINGLESTEP : PTRACE_CONT, other, 0, nullptr);
  }
}

// Runs the real instruction under one of the tracer's int3s. Every other
// running thread is held (SIGSTOP) while the int3 is lifted: without that a
// traced thread could run through the address unseen and its trace would
// lose a branch. Trace int3s sit only on jumps, calls, returns and loops,
// which never block, so the hold is one instruction long. The same for a
// user breakpoint stepped off (start_thread), whose other threads would
// pass it unseen, unless its instruction may block (step_may_block).
Expected<void> PtraceProcess::step_held(pid_t tid, ThreadState& thread, uint64_t pc, int signal) {
  auto traced = trace_int3s_.find(pc);
  auto user = breakpoints_.find(pc);
  if (traced == trace_int3s_.end() && user == breakpoints_.end()) {
    return make_error(ErrorCode::Internal, "No int3 to step off at " + hex(pc));
  }
  const std::vector<pid_t> held = hold_others(tid);
  const uint8_t original = traced != trace_int3s_.end() ? traced->second.original : user->second;
  Expected<void> result = raw_write(pc, {original});
  int status = 0;
  bool stepped = false;
  if (result) {
    auto r = do_ptrace(PTRACE_SINGLESTEP, tid, 0, signal_arg(signal));
    if (!r) result = r.error();
    stepped = r && wait_retry(tid, &status, __WALL) == tid;
  }
  if (trace_int3_written(pc) || breakpoints_.count(pc) != 0) (void)raw_write(pc, {kInt3});
  release_held(held);
  if (!result) return result;
  thread.running = true;
  thread.stepping = true;
  thread.last_kind = StepKind::SingleStep;
  // As raw_resume does: an all-stop's SIGSTOP still queued can stop the
  // step before it runs anything, and the thread then stands where this
  // resume found it. Left from an earlier resume (the tracer moving it onto
  // a breakpoint it then hit), the flag made the restart run into the
  // breakpoint it had stopped at, reported again (test_breakpoint_resume).
  thread.unrun_at_resume = thread.pc_moved_unrun;
  thread.pc_moved_unrun = false;
  if (stepped) replay_.emplace_front(tid, status);
  return {};
}

// Whether one step of the instruction at `pc` (its first byte `first_byte`,
// the rest read from memory) may wait in the kernel for as long as it
// likes: a system call (syscall, sysenter, int 0x80). step_held would hold
// every other thread, and btstub, that long.
bool PtraceProcess::step_may_block(uint64_t pc, uint8_t first_byte) {
  if (first_byte != 0x0f && first_byte != 0xcd) return false;
  const std::vector<uint8_t> next = raw_read(pc + 1, 1);
  if (next.empty()) return true;
  return first_byte == 0x0f ? next[0] == 0x05 || next[0] == 0x34 : next[0] == 0x80;
}

// One step of a stopped thread, waited for here (the translating tracer
// moving a held thread out of its instrumentation). The SIGSTOP of an
// all-stop still queued for it is the one it owes: absorbed, and the step
// made again.
Expected<int> PtraceProcess::step_now(pid_t tid) {
  auto found = threads_.find(tid);
  if (found == threads_.end() || found->second.running || found->second.exited) {
    return make_error(ErrorCode::InvalidArgument, "Thread " + std::to_string(tid) + " is not stopped");
  }
  ThreadState& thread = found->second;
  for (int tries = 0; tries < 4; ++tries) {
    if (auto r = do_ptrace(PTRACE_SINGLESTEP, tid, 0, nullptr); !r) return r.error();
    int status = 0;
    if (wait_retry(tid, &status, __WALL) != tid) return make_error(ErrorCode::NoProcess, "The thread is gone");
    if (!WIFSTOPPED(status) || (status >> 16) != 0) {
      // Its end (or an event a step cannot cause): the event loop's.
      thread.running = true;
      replay_.emplace_front(tid, status);
      return make_error(ErrorCode::NoProcess, "The thread ended during a step of btstub's");
    }
    const int signal = WSTOPSIG(status);
    if (signal == SIGSTOP && thread.sigstop_expected) {
      thread.sigstop_expected = false;
      continue;
    }
    return signal;
  }
  return make_error(ErrorCode::Internal, "The thread does not step");
}

}  // namespace stub::process
