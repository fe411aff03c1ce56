#pragma once
// The contract between the process layer (PtraceProcess, which owns ptrace
// and the event loop) and a software branch tracer. The tracer sees every
// resume and every stop of a traced thread before the process layer acts on
// it, and may absorb a stop so the thread goes on without the client ever
// hearing of it: that is how one block runs per ptrace stop.
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/expected.h"
#include "protocol/register_file.h"
#include "stub/process/process.h"
#include "stub/process/process_copy.h"
#include "stub/process/shared_mapping.h"

namespace stub::process {

// What a tracer may do to a stopped thread. Implemented by the process layer.
class TracedThreadControl {
 public:
  virtual ~TracedThreadControl() = default;
  virtual Expected<protocol::RegisterFile> read_registers(pid_t tid) = 0;
  // The program's original bytes: user breakpoints hidden, as Process::read_memory.
  virtual Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) = 0;
  // The same into `out` (the translating tracer's log, megabytes read at
  // every drain: no allocation a read): how many bytes were read.
  virtual Expected<std::size_t> read_memory_into(uint64_t addr, std::span<uint8_t> out) {
    auto bytes = read_memory(addr, out.size());
    if (!bytes) return bytes.error();
    const std::size_t n = std::min(bytes->size(), out.size());
    std::copy_n(bytes->begin(), n, out.begin());
    return n;
  }
  // True when a user software breakpoint (Z0) is inserted at `addr`.
  virtual bool has_user_breakpoint(uint64_t addr) const = 0;
  // Arms (nullopt: disarms) this thread's trace stop: an execution
  // breakpoint in a debug-register slot reserved for the tracer, apart from
  // the slots Z1-Z4 share. It fires before the instruction at `addr` runs.
  virtual Expected<void> set_trace_stop(pid_t tid, std::optional<uint64_t> addr) = 0;

  // ---- software trace stops (TraceStops::Breakpoint); the defaults suit a
  // layer without them ----
  // Arms (nullopt: disarms) this thread's trace stop as an int3 the process
  // layer owns: reference-counted by address over the threads that armed it,
  // hidden from read_memory like user breakpoints, and reported as
  // TracedStop::trace_stop_hit with the pc rewound onto it. A thread that
  // exits drops its reference. Only emulable control transfers should get
  // one: a thread that must really run the instruction under it is stepped
  // by the process layer with every other thread held (see PtraceProcess).
  virtual Expected<void> set_trace_breakpoint(pid_t tid, std::optional<uint64_t> addr) {
    (void)tid, (void)addr;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No software trace stops");
  }
  // The same with several int3s at once (the thread stops at whichever it
  // reaches first: a tracer looking past a conditional branch arms both of
  // its outcomes). Empty disarms. On failure the old setting stays.
  virtual Expected<void> set_trace_breakpoints(pid_t tid, const std::vector<uint64_t>& addrs) {
    if (addrs.size() > 1) {
      return btstub::make_error(btstub::ErrorCode::NotSupported, "One software trace stop per thread here");
    }
    return set_trace_breakpoint(tid, addrs.empty() ? std::nullopt : std::optional<uint64_t>(addrs[0]));
  }
  // While kept, an int3 no thread holds a reference on any more stays in
  // the program (still hidden from reads) instead of being lifted, so a
  // thread coming back to that transfer stops without the int3 being
  // written again. Only sound while every thread is traced: an untraced
  // thread meets each kept int3 as an extra stop. Turning it off lifts the
  // unreferenced ones.
  virtual void keep_trace_breakpoints(bool keep) { (void)keep; }
  // The program may have stored into [begin, end) behind the tracer's back
  // (a write to /proc/self/mem, a store between two mprotects) or mapped
  // other code there: a trace int3 there that a thread waits at and that
  // was overwritten takes the new byte as its original and is written
  // again, or the thread would run past that transfer unseen; a kept one
  // no thread waits at is forgotten (it could fall inside a new
  // instruction).
  virtual void code_changed(uint64_t begin, uint64_t end) { (void)begin, (void)end; }
  // The program can store into the code of [begin, end) with no system
  // call (a writable mapping): an int3 there may be overwritten unseen, and
  // lifting it then would write back a stale byte. Kept int3s there are
  // lifted now, ones a thread waits at when the last lets go (even while
  // int3s are kept); the tracer arms none there any more.
  virtual void lift_trace_breakpoints(uint64_t begin, uint64_t end) { (void)begin, (void)end; }
  // The text of the program's /proc/PID/maps, read through thread `tid`
  // (nullopt: not known here).
  virtual std::optional<std::string> maps_text(pid_t tid) {
    (void)tid;
    return std::nullopt;
  }
  // The general registers, rip and eflags (and fs/gs bases) only: all a
  // tracer reads at each stop, without the cost of the FPU/XSAVE state.
  virtual Expected<protocol::RegisterFile> read_general_registers(pid_t tid) { return read_registers(tid); }
  // Emulating a branch at a trace stop: rip, rsp, rcx and the pushed return
  // address. Registers not marked available in `regs` are left alone.
  virtual Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& regs) {
    (void)tid, (void)regs;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Registers are read-only here");
  }
  // A copy of the program standing where the stopped thread `tid` stands
  // (stub/process/process_copy.h), with none of our int3s: a checkpoint of
  // the recording. Only for a program btstub launched (a copy must be its
  // child) whose other threads are all in `idle`: threads the tracer knows
  // run none of the program's code now (stopped, or waiting in a futex)
  // and will not without its hearing of it (a copy has one thread).
  virtual Expected<std::unique_ptr<ProcessCopy>> fork_copy(pid_t tid, const std::vector<pid_t>& idle = {}) {
    (void)tid, (void)idle;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No copies of the program here");
  }
  // Writes program memory (our int3s stay, as Process::write_memory).
  virtual Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) {
    (void)addr, (void)bytes;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Memory is read-only here");
  }

  // The siginfo_t of the signal that stopped `tid`, and its replacement
  // (the translating tracer puts the original address of a fault in the
  // code cache in place of the cache's). The same as Process's.
  virtual Expected<std::vector<uint8_t>> read_siginfo(pid_t tid) {
    (void)tid;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No siginfo");
  }
  virtual Expected<void> write_siginfo(pid_t tid, const std::vector<uint8_t>& info) {
    (void)tid, (void)info;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No siginfo");
  }

  // ---- the translating tracer (stub/tracing/translating_tracer.h) ----
  // Maps `size` bytes (a multiple of the page size) of fresh anonymous
  // memory into the program, readable and writable, executable when
  // `executable`, by a system call the stopped thread `tid` makes (its pc's
  // bytes borrowed for the `syscall`, every other thread held meanwhile);
  // within `reach` bytes of `near` unless near is 0. Its address.
  virtual Expected<uint64_t> map_program_memory(pid_t tid, uint64_t near, uint64_t reach, uint64_t size,
                                                bool executable) {
    (void)tid, (void)near, (void)reach, (void)size, (void)executable;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot map memory into the program here");
  }
  // The same, not executable, as memory btstub maps too (a memfd both map,
  // left out of the program's forks as map_program_memory's): what the
  // program writes there btstub reads in place, and the other way round.
  virtual Expected<SharedMapping> map_shared_program_memory(pid_t tid, uint64_t near, uint64_t reach,
                                                            uint64_t size) {
    (void)tid, (void)near, (void)reach, (void)size;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot share memory with the program here");
  }
  // Backs [begin, begin + size) of memory the tracer mapped itself with
  // pages in the program's page tables, bytes unchanged, by a madvise
  // (MADV_POPULATE_WRITE) the stopped thread `tid` makes (every other
  // thread held meanwhile): its first writes there then take no page fault
  // each. Page-aligned; an error where the range is not all the tracer's,
  // and where the thread runs under seccomp (a filter may kill it there).
  virtual Expected<void> populate_program_memory(pid_t tid, uint64_t begin, uint64_t size) {
    (void)tid, (void)begin, (void)size;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot populate the program's memory here");
  }
  // Writes into memory the tracer mapped itself (map_program_memory): the
  // bytes as given, int3s included, none of them taken for the client's.
  virtual Expected<void> write_tracer_memory(uint64_t addr, const std::vector<uint8_t>& bytes) {
    (void)addr, (void)bytes;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Memory is read-only here");
  }
  // The addresses of the client's software breakpoints (Z0).
  virtual std::vector<uint64_t> user_breakpoints() const { return {}; }
  // Whether the client has hardware breakpoints or watchpoints (Z1-Z4) in.
  virtual bool hw_points_in_use() const { return false; }
  // Whether a watchpoint of the client's (Z2-Z4) covers any byte of
  // [begin, end): the debug registers see only what the CPU reads and
  // writes, so a transfer touching such bytes must run, not be emulated.
  virtual bool watched(uint64_t begin, uint64_t end) const {
    (void)begin, (void)end;
    return false;
  }
  // Whether a hardware breakpoint of the client's (Z1) is at `addr`: it
  // fires only where the CPU is about to run the instruction there, so a
  // thread the tracer moved there by emulation must run from it.
  virtual bool hw_breakpoint_at(uint64_t addr) const {
    (void)addr;
    return false;
  }
  // Queues `signal` for thread `tid` again: it stopped the thread where the
  // tracer could not let the client see it, and is to come back at once.
  virtual void resend_signal(pid_t tid, int signal) { (void)tid, (void)signal; }
  // Whether `signal` waits for thread `tid` now: pending for it or its
  // process, and not blocked (a timer's next signal come while the tracer
  // took a copy).
  virtual bool signal_waits(pid_t tid, int signal) {
    (void)tid, (void)signal;
    return false;
  }
  // Whether the process layer is stopping every thread (all-stop) right
  // now: a stop the tracer absorbs then keeps its thread stopped, and the
  // client sees it where it stands.
  virtual bool stopping_all() const { return false; }
  // Non-stop mode: the client may change breakpoints while threads run.
  virtual bool non_stop() const { return false; }
  // Single-steps the stopped thread `tid` at once and waits for that step,
  // every other thread going on as it was: the signal of the stop it ended
  // in (SIGTRAP: the step done; another: a signal that stopped it first,
  // not delivered). An error when the thread is gone (its end is reported
  // as usual).
  virtual Expected<int> step_now(pid_t tid) {
    (void)tid;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot step a thread here");
  }
};

// One stop of a traced thread as the process layer observed it.
struct TracedStop {
  pid_t tid = 0;
  int signal = 0;                    // host signal (SIGTRAP for traps and steps)
  uint64_t pc = 0;                   // after rewinding a software breakpoint
  bool trace_stop_hit = false;       // the tracer's execution breakpoint (DR6) or int3 fired
  bool single_stepped = false;       // a single-step completed
  bool software_breakpoint = false;  // a user int3 fired
  bool watchpoint_hit = false;       // a user Z1-Z4 fired
  bool syscall_exit = false;         // reserved for a syscall-stop backend
};

enum class TraceVerdict {
  Report,      // the process layer handles the stop as it would untraced
  Continue,    // absorbed: PTRACE_CONT without a signal, nothing reported
  SingleStep,  // absorbed: PTRACE_SINGLESTEP without a signal, nothing reported
  // Reported to the client as a stop without a signal (T00) where the
  // thread stands, whatever the stop itself was: a recorded program about
  // to exit (gdb's record full stops there too, so the user can go back
  // from the end).
  StopHere,
  // Reported to the client as the stop it is, also where it ends a step
  // the tracer took itself (which Report would have the process layer run
  // on from, as from any step the client did not ask for): the trace is
  // full under --trace-full=stop, and the thread stands before the branch
  // that does not fit.
  ShowStop,
};

class TraceHook {
 public:
  virtual ~TraceHook() = default;

  // Is `tid` traced? The process layer calls the other methods only for
  // traced threads (and on_thread_created for every new thread).
  virtual bool traces(pid_t tid) const = 0;

  // Before EVERY resume of a traced thread: the client's resumes and the
  // process layer's own (stepping off a breakpoint, resuming after all-stop).
  // `signal` is delivered with the resume. The tracer arms its trace stop
  // and returns the kind to use: it may turn a Continue into a SingleStep
  // (e.g. at a syscall, or to stop at a signal handler's first instruction;
  // that step's stop then comes to on_stop), never a step into a continue.
  virtual StepKind before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) = 0;

  // At EVERY stop of a traced thread, before the process layer interprets
  // it, except the SIGSTOPs the process layer itself sends to stop all
  // threads (those threads get before_resume when they resume). A verdict
  // other than Report while the process layer is stopping all threads means
  // "keep it stopped quietly"; before_resume follows when it resumes.
  virtual TraceVerdict on_stop(TracedThreadControl& control, const TracedStop& stop) = 0;

  // The process layer stopped this traced thread (with the SIGSTOP it sends
  // to stop all threads) because another thread reported: whatever it ran
  // since its last stop is settled now, so its trace reads complete.
  virtual void on_held(TracedThreadControl& control, pid_t tid) { (void)control, (void)tid; }

  virtual void on_thread_created(pid_t tid, pid_t parent) = 0;
  // The thread is gone; its trace stays readable (gdb may still ask).
  virtual void on_thread_exited(pid_t tid) = 0;
  // execve replaced the address space (the calling thread survives as the
  // process's main thread).
  virtual void on_exec(pid_t tid) = 0;

  // A thread the hook does not trace (or a disabled one) stopped on a
  // software trace stop another thread armed. Move it past the instruction
  // under the int3 as if it had run (true), or answer false: the process
  // layer then runs the real instruction with the int3 lifted and every
  // other thread held.
  virtual bool pass_trace_breakpoint(TracedThreadControl& control, pid_t tid) {
    (void)control, (void)tid;
    return false;
  }

  // Whether the hook stops threads with set_trace_stop (a debug register):
  // the process layer then keeps that slot from the client's Z1-Z4.
  virtual bool uses_debug_register() const { return false; }
  // Whether the hook puts int3s into the program (set_trace_breakpoint):
  // the process layer then takes them out of memory a vfork child shares.
  virtual bool uses_breakpoints() const { return false; }

  // Whether the program's end is to be held (ProcessEvent::exit_held): the
  // hook records the whole program, and its history must outlive the exit
  // until the client lets the program go.
  virtual bool holds_exit() const { return false; }
};

}  // namespace stub::process
