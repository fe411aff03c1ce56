#pragma once
// The debugged process behind a small interface, so that packet handling and
// replay can be unit-tested with a fake. The ptrace implementation is
// stub/process/ptrace_process.{h,cc}; it is the only code that calls ptrace.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/expected.h"
#include "protocol/register_file.h"
#include "protocol/requests.h"
#include "stub/process/debug_registers.h"
#include "stub/process/proc_maps.h"
#include "stub/process/process_identity.h"

namespace stub::process {

using btstub::Expected;

enum class StepKind { Continue, SingleStep };

// What a wait observed. Signals are host signal numbers.
struct ProcessEvent {
  enum class Kind {
    Stopped,        // thread `tid` stopped with `signal` (SIGTRAP for breakpoints/steps)
    Exited,         // whole process exited with `exit_code`
    Killed,         // whole process was killed by `signal`
    ThreadExited,   // thread `tid` exited with `exit_code` (only with set_thread_events(true))
    NoResumed,      // thread `tid` exited and no thread the client resumed is left running
  };
  Kind kind = Kind::Stopped;
  // The process it happened in (set by ProcessGroup when several are
  // debugged); 0 in events straight from one Process.
  pid_t pid = 0;
  pid_t tid = 0;
  int signal = 0;
  int exit_code = 0;
  bool software_breakpoint = false;  // stopped by one of our int3s; pc already rewound
  bool single_stepped = false;       // a single-step completed
  // A signal met by a single step the client asked for: reported even when
  // the client passes it (QPassSignals), as gdbserver does, so that the
  // client runs the handler and then finishes its step past it.
  bool during_step = false;
  // A Z1-Z4 debug register fired: Hardware for Z1, the watch kinds carry
  // the triggering data address in hw_address.
  std::optional<protocol::BreakpointType> hw_stop;
  uint64_t hw_address = 0;
  // Set when the program called exec: the new program's path. Its other
  // threads and our breakpoints are gone.
  std::optional<std::string> exec_path;
  // fork-events+/vfork-events+ (Process::set_fork_events): `tid` forked or
  // vforked `fork_child`, which is held stopped until detached or followed;
  // or (vfork_done) the vfork child of `tid` exec'd or exited.
  pid_t fork_child = 0;
  bool vfork = false;
  bool vfork_done = false;
  // The program is ending (exit_group, its last thread's exit, or a fatal
  // signal) while its whole history is recorded: its leader `tid` is held
  // where it ends, memory and registers still there, so the history can be
  // walked back from the end. Reported as SIGKILL, as rr reports the end of
  // a recording; the next forward resume lets it end (Exited / Killed).
  bool exit_held = false;
  // A system call's entry or return the client catches
  // (Process::set_syscall_catch), with its number; signal SIGTRAP.
  enum class SyscallStop { None, Entry, Return };
  SyscallStop syscall = SyscallStop::None;
  int syscall_number = 0;
};

struct LaunchOptions {
  std::vector<std::string> argv;      // argv[0] is the program path
  std::vector<std::string> wrapper;   // --wrapper CMD.. (run as wrapper prog args)
  // Non-empty: start it all through this shell (`SHELL -c "exec ..."`,
  // stub/process/shell_command.h), as gdbserver's --startup-with-shell.
  std::string shell;
  bool disable_randomization = true;
  // The program's environment ("NAME=VALUE" each); nullopt: btstub's own.
  std::optional<std::vector<std::string>> environment;
  // Where it starts; empty: btstub's own working directory.
  std::string working_dir;
  bool stdio_to_stderr = false;       // stdio mode: inferior's stdout -> our stderr, stdin <- /dev/null
  // Make the program the foreground process group of btstub's terminal
  // (its stderr, as for gdbserver), so that it may read it and change its
  // settings; see stub/server/terminal.h.
  bool foreground = false;
};

class Process {
 public:
  virtual ~Process() = default;

  virtual pid_t pid() const = 0;
  virtual std::vector<pid_t> threads() const = 0;
  virtual bool attached() const = 0;  // true if we attached rather than launched

  // Registers in the wire layout (protocol/amd64_registers.h).
  virtual Expected<protocol::RegisterFile> read_registers(pid_t tid) = 0;
  // The optional register sets its threads have (CPU and kernel); the
  // base set (core to segments) unless an implementation knows more.
  virtual protocol::Amd64Features register_features() const { return {}; }
  // Only the general registers (rip, rsp, ...; the rest unavailable): what
  // a stop reply or a pc lookup needs, without the cost of the FP/SSE state.
  virtual Expected<protocol::RegisterFile> read_general_registers(pid_t tid) { return read_registers(tid); }
  virtual Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& regs) = 0;

  // Memory as the program sees it with our breakpoints hidden: reads never
  // show an inserted int3, writes over an inserted breakpoint update the
  // saved original byte. A partial read returns the readable prefix; nothing
  // readable is a MemoryFault error.
  virtual Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) = 0;
  virtual Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) = 0;

  // Software breakpoints (int3), reference-free: insert twice, remove once removes it.
  virtual Expected<void> insert_breakpoint(uint64_t addr) = 0;
  virtual Expected<void> remove_breakpoint(uint64_t addr) = 0;

  // Resumes one thread (signal 0: none). Stepping off an inserted breakpoint
  // at the thread's pc is handled inside.
  virtual Expected<void> resume(pid_t tid, StepKind kind, int signal) = 0;

  // Non-blocking: the next event if one is ready. Blocking variant waits.
  virtual std::optional<ProcessEvent> poll_event() = 0;
  virtual Expected<ProcessEvent> wait_event() = 0;

  // Asks a running process to stop (SIGINT, like gdbserver's Ctrl-C).
  virtual Expected<void> interrupt() = 0;
  virtual Expected<void> kill() = 0;
  // Removes all breakpoints and detaches; the program runs on.
  virtual Expected<void> detach() = 0;
  // The signal the client last saw stop `tid` and lets the program have:
  // delivered (with its siginfo) when the next detach() lets the thread go,
  // as gdbserver does; 0 forgets it. A signal kept pending goes first.
  virtual void deliver_on_detach(pid_t tid, int signal) { (void)tid, (void)signal; }

  // Auxiliary vector (/proc/pid/auxv), path of the executable.
  virtual Expected<std::string> read_auxv() = 0;
  virtual Expected<std::string> exec_file() = 0;

  // Whether `addr` lies in executable memory; nullopt when unknown (then
  // nothing is refused on its account).
  virtual std::optional<bool> executable(uint64_t addr) const {
    (void)addr;
    return std::nullopt;
  }

  // ---- added with all-stop threads; defaults suit a process without them ----
  // Hardware breakpoints and watchpoints (Z1-Z4) on every thread, if the
  // machine's debug registers really trap.
  virtual bool has_hw_points() const { return false; }
  virtual Expected<void> insert_hw_point(protocol::BreakpointType type, uint64_t addr, uint64_t len) {
    (void)type, (void)addr, (void)len;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No hardware breakpoints");
  }
  virtual Expected<void> remove_hw_point(protocol::BreakpointType type, uint64_t addr, uint64_t len) {
    (void)type, (void)addr, (void)len;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No hardware breakpoints");
  }
  // Signals (host numbers) delivered to the thread at once, never reported.
  virtual void set_pass_signals(const std::set<int>& signals) { (void)signals; }
  // Stop untraced threads that continue at the entry and return of these
  // system calls (an empty set: of every one), reported as
  // ProcessEvent::syscall (QCatchSyscalls); nullopt: at none.
  virtual Expected<void> set_syscall_catch(const std::optional<std::set<int>>& caught) {
    if (!caught) return {};
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Catching system calls is not supported here");
  }
  // Report thread exits as ProcessEvent::Kind::ThreadExited (QThreadEvents).
  virtual void set_thread_events(bool enabled) { (void)enabled; }
  // Its parent and user and group ids (qProcessInfo); nullopt: unknown.
  virtual std::optional<ProcessIdentity> identity() const { return std::nullopt; }
  // For qXfer:threads: the thread's name (comm) and the core it last ran on.
  virtual std::string thread_name(pid_t tid) const { (void)tid; return {}; }
  virtual int thread_core(pid_t tid) const { (void)tid; return -1; }
  // The siginfo_t of the signal that stopped `tid` (qXfer:siginfo:read).
  virtual Expected<std::vector<uint8_t>> read_siginfo(pid_t tid) {
    (void)tid;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No siginfo");
  }

  // ---- fork events (fork-events+, vfork-events+) ----
  // Report (v)forks as events (ProcessEvent::fork_child) and hold the child
  // stopped; off, a child leaves at once, without our int3s.
  virtual void set_fork_events(bool fork, bool vfork) { (void)fork, (void)vfork; }
  // The held child of the last (v)fork event, 0 if none.
  virtual pid_t fork_child() const { return 0; }
  // Puts back, in the held child only, the byte under an int3 it inherited.
  virtual Expected<void> remove_fork_child_breakpoint(uint64_t addr) {
    (void)addr;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No fork child");
  }
  // Lets the held child run free, without any of our int3s.
  virtual Expected<void> detach_fork_child() {
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No fork child");
  }
  // Detaches this process and debugs the held child in its place: pid()
  // becomes the child's (follow-fork-mode child).
  virtual Expected<void> follow_fork_child() {
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No fork child");
  }
  // Debugs the held child as a process of its own beside this one (gdb's
  // detach-on-fork off); it keeps the int3s it inherited and not yet
  // removed, and is not branch-traced.
  virtual Expected<std::unique_ptr<Process>> adopt_fork_child() {
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No fork child");
  }

  // ---- several processes at once (stub/process/process_group.h) ----
  // Stops every running thread, as for an event of this process's own:
  // another process reported one, and all-stop means everything stops.
  // What a thread had to say meanwhile stays pending for a later resume.
  virtual void stop_all() {}
  // Whether an event was kept for later (while stopping all): the next
  // poll reports it, before anything new.
  virtual bool has_pending_event() const { return false; }
  // Whether any thread was resumed and has not stopped since: a Ctrl-C
  // must reach a process that runs (with schedule-multiple off gdb may
  // resume a fork child alone).
  virtual bool has_running_threads() const { return true; }

  // ---- non-stop mode (gdb's `set non-stop on`) ----
  // On: an event stops only the thread that had it, the others go on
  // running; each thread is resumed and stopped on its own. Off: all-stop.
  // Switched only while every thread is stopped.
  virtual Expected<void> set_non_stop(bool on) {
    if (!on) return {};
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Non-stop mode is not supported");
  }
  // Non-stop: asks the running thread `tid` to stop (vCont;t). Its stop
  // is reported as an event with signal 0 unless another event of its
  // own comes first; a thread already stopped is left as it is.
  virtual Expected<void> stop_thread(pid_t tid) {
    (void)tid;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Non-stop mode is not supported");
  }
  // Whether `tid` was resumed and has not reported a stop since.
  virtual bool thread_running(pid_t tid) const {
    (void)tid;
    return false;
  }

  // ---- running a step ahead (stub/session/step_ahead.h) ----
  // Puts back a siginfo_t read with read_siginfo: undoing a step also
  // undoes what `$_siginfo` shows.
  virtual Expected<void> write_siginfo(pid_t tid, const std::vector<uint8_t>& info) {
    (void)tid, (void)info;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No siginfo");
  }
  // Whether a signal waits in the thread's queue or its process's, blocked
  // or not; an error when the thread is gone.
  virtual Expected<bool> signal_waiting(pid_t tid) {
    (void)tid;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "No signal queues");
  }
  // Keeps `event`, which a stopped thread (or the whole process) just had,
  // to be reported on the next resume instead of running, like an event
  // that came while stopping all: a signal that stops a step run ahead
  // belongs to the program and reaches the client in turn.
  // `siginfo` (read_siginfo's bytes) is the signal's, put back when it is
  // reported or delivered.
  virtual void keep_pending(const ProcessEvent& event, const std::vector<uint8_t>& siginfo) {
    (void)event, (void)siginfo;
  }
  // LLDB asks each thread's stop (qThreadStopInfo, jThreadsInfo): the
  // event `tid` keeps for a later resume (it came while the others were
  // stopped for another thread's), handed over now. It is no longer kept,
  // and its signal's siginfo is the thread's again: the client, told of
  // it, resumes the thread knowing (lldb steps it off the breakpoint it
  // hit, or passes its signal). nullopt when the thread keeps none, or one
  // only a resume may report (a fork, an exec, the program's end).
  virtual std::optional<ProcessEvent> take_pending_event(pid_t tid) {
    (void)tid;
    return std::nullopt;
  }
  // Memory for the client's own use (LLDB's _M, for the code and data of
  // expressions it evaluates): mapped by a system call the stopped thread
  // `tid` makes, with `prot` (PROT_* bits). Its address.
  virtual Expected<uint64_t> allocate_memory(pid_t tid, uint64_t size, int prot) {
    (void)tid, (void)size, (void)prot;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot allocate memory in the program here");
  }
  // Unmaps what allocate_memory mapped (LLDB's _m).
  virtual Expected<void> free_memory(pid_t tid, uint64_t addr, uint64_t size) {
    (void)tid, (void)addr, (void)size;
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot free memory in the program here");
  }
  // Whether a Z1-Z4 point is inserted: a step could then trip it.
  virtual bool hw_points_in_use() const { return false; }
  // The Z1-Z4 points inserted, as the debug registers hold them.
  virtual DebugRegisterState hw_points() const { return {}; }
  // The program's mappings now; empty when unknown.
  virtual std::vector<MemoryMapping> mappings() const { return {}; }
  // Whether the thread runs with a shadow stack (x86 CET): a call or ret
  // then also moves a pointer that no register file holds.
  virtual bool shadow_stack(pid_t tid) const { (void)tid; return false; }
};

}  // namespace stub::process
