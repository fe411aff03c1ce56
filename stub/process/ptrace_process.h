#pragma once
// stub::process::Process on Linux ptrace (x86-64), all-stop: threads are
// auto-attached on clone, and when one thread's event is reported every
// other thread is stopped too (SIGSTOP). An event another thread had
// meanwhile is kept pending and reported on a later resume instead of
// running that thread. A TraceHook (stub/process/trace_hook.h) sees every resume and
// stop of the threads it traces.
//
// Split over ptrace_process.cc (launch, attach, memory, control),
// ptrace_events.cc (resume, event loop, all-stop) and ptrace_debug.cc
// (debug registers, trace stops, Z1-Z4, the tracer's int3s).
//
// The tracer's int3s (set_trace_breakpoint) live beside user breakpoints,
// possibly at the same address. A thread must never run with one lifted
// while others run (they could pass unseen), so any step at one is done by
// step_held: every other running thread is SIGSTOPped first, and wait
// statuses reaped from them meanwhile are replayed later by reap(). So is
// a step off a user breakpoint, unless its instruction is a system call
// (which may wait for a held thread): that one lifts the int3 until the
// step's event is reaped.
//
// ptrace binds a tracee to the tracing *thread*: every call on one object
// must come from the thread that created it. Events are reaped with
// waitpid(tid) while one thread is known and waitpid(-1, __WALL) otherwise,
// so nothing else in the stub may reap children with waitpid(-1).
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <memory>
#include <optional>
#include <vector>

#include "stub/process/counted_map.h"
#include "stub/process/debug_registers.h"
#include "stub/process/process.h"
#include "stub/process/trace_hook.h"
#include "stub/process/wait_routes.h"

namespace stub::process {

namespace ptrace_detail {
struct InjectedCall;
}

class PtraceProcess final : public Process, public TracedThreadControl, public WaitOwner {
 public:
  // Starts argv (behind the wrapper, if any) stopped at its first
  // instruction, in its own process group, killed if we die.
  static Expected<std::unique_ptr<PtraceProcess>> launch(const LaunchOptions& options);
  // Attaches to every thread of a running process and leaves it stopped.
  static Expected<std::unique_ptr<PtraceProcess>> attach(pid_t pid);

  // A launched process still present is killed, an attached one detached,
  // so a dropped connection never leaves a traced orphan behind.
  ~PtraceProcess() override;
  PtraceProcess(const PtraceProcess&) = delete;
  PtraceProcess& operator=(const PtraceProcess&) = delete;

  pid_t pid() const override { return pid_; }
  std::vector<pid_t> threads() const override;
  bool attached() const override { return attached_; }

  Expected<protocol::RegisterFile> read_registers(pid_t tid) override;
  protocol::Amd64Features register_features() const override;
  Expected<protocol::RegisterFile> read_general_registers(pid_t tid) override;
  Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& regs) override;

  Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) override;
  Expected<std::size_t> read_memory_into(uint64_t addr, std::span<uint8_t> out) override;
  Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override;

  Expected<void> insert_breakpoint(uint64_t addr) override;
  Expected<void> remove_breakpoint(uint64_t addr) override;

  Expected<void> resume(pid_t tid, StepKind kind, int signal) override;
  std::optional<ProcessEvent> poll_event() override;
  Expected<ProcessEvent> wait_event() override;

  Expected<void> interrupt() override;
  Expected<void> kill() override;
  Expected<void> detach() override;
  void deliver_on_detach(pid_t tid, int signal) override;

  Expected<std::string> read_auxv() override;
  Expected<std::string> exec_file() override;

  bool has_hw_points() const override { return debug_registers_work(); }
  std::optional<bool> executable(uint64_t addr) const override;
  void keep_pending(const ProcessEvent& event, const std::vector<uint8_t>& siginfo) override;
  Expected<bool> signal_waiting(pid_t tid) override;
  Expected<void> write_siginfo(pid_t tid, const std::vector<uint8_t>& info) override;
  bool hw_points_in_use() const override { return !user_debug_.empty(); }
  bool watched(uint64_t begin, uint64_t end) const override { return user_debug_.watches(begin, end); }
  bool hw_breakpoint_at(uint64_t addr) const override { return user_debug_.breaks_at(addr); }
  DebugRegisterState hw_points() const override { return user_debug_; }
  std::vector<MemoryMapping> mappings() const override { return read_maps(pid_); }
  bool shadow_stack(pid_t tid) const override;
  Expected<void> insert_hw_point(protocol::BreakpointType type, uint64_t addr, uint64_t len) override;
  Expected<void> remove_hw_point(protocol::BreakpointType type, uint64_t addr, uint64_t len) override;
  void set_pass_signals(const std::set<int>& signals) override { pass_signals_ = signals; }
  Expected<void> set_syscall_catch(const std::optional<std::set<int>>& caught) override {
    caught_syscalls_ = caught;
    return {};
  }
  void set_thread_events(bool enabled) override { thread_events_ = enabled; }
  std::optional<ProcessIdentity> identity() const override { return read_process_identity(pid_); }
  std::string thread_name(pid_t tid) const override;
  int thread_core(pid_t tid) const override;
  Expected<std::vector<uint8_t>> read_siginfo(pid_t tid) override;
  // Fork events (ptrace_fork.cc).
  void set_fork_events(bool fork, bool vfork) override;
  pid_t fork_child() const override { return held_child_ ? held_child_->pid : 0; }
  Expected<void> remove_fork_child_breakpoint(uint64_t addr) override;
  Expected<void> detach_fork_child() override;
  Expected<void> follow_fork_child() override;
  Expected<std::unique_ptr<Process>> adopt_fork_child() override;
  void stop_all() override;
  // Non-stop mode (ptrace_non_stop.cc).
  Expected<void> set_non_stop(bool on) override;
  Expected<void> stop_thread(pid_t tid) override;
  bool thread_running(pid_t tid) const override;
  bool has_pending_event() const override;
  std::optional<ProcessEvent> take_pending_event(pid_t tid) override;  // ptrace_events.cc
  Expected<uint64_t> allocate_memory(pid_t tid, uint64_t size, int prot) override;  // ptrace_map_program.cc
  Expected<void> free_memory(pid_t tid, uint64_t addr, uint64_t size) override;
  bool has_running_threads() const override;
  // WaitOwner: whether `tid` is one of our threads (stub/process/wait_routes.h).
  bool owns_thread(pid_t tid) const override { return alive_ && threads_.count(tid) != 0; }

  // The hook sees every later resume and stop of the threads it traces;
  // nullptr removes it. Not owned; it must outlive its installation.
  void set_trace_hook(TraceHook* hook);

  // TracedThreadControl (read_registers/read_memory are shared with Process).
  bool has_user_breakpoint(uint64_t addr) const override { return breakpoints_.count(addr) != 0; }
  Expected<void> set_trace_stop(pid_t tid, std::optional<uint64_t> addr) override;
  // The tracer's int3s (TraceStops::Breakpoint): per thread, reference-
  // counted by address; see TracedThreadControl::set_trace_breakpoint.
  Expected<void> set_trace_breakpoint(pid_t tid, std::optional<uint64_t> addr) override;
  Expected<void> set_trace_breakpoints(pid_t tid, const std::vector<uint64_t>& addrs) override;
  bool has_trace_breakpoint(uint64_t addr) const { return trace_int3s_.count(addr) != 0; }
  void keep_trace_breakpoints(bool keep) override;
  void code_changed(uint64_t begin, uint64_t end) override;
  void lift_trace_breakpoints(uint64_t begin, uint64_t end) override;
  std::optional<std::string> maps_text(pid_t tid) override { return read_maps_text(tid); }
  Expected<std::unique_ptr<ProcessCopy>> fork_copy(pid_t tid, const std::vector<pid_t>& idle = {}) override;  // ptrace_copy_program.cc
  Expected<uint64_t> map_program_memory(pid_t tid, uint64_t near, uint64_t reach, uint64_t size,
                                        bool executable) override;  // ptrace_map_program.cc
  Expected<void> populate_program_memory(pid_t tid, uint64_t begin, uint64_t size) override;  // ptrace_map_program.cc
  Expected<SharedMapping> map_shared_program_memory(pid_t tid, uint64_t near, uint64_t reach,
                                                    uint64_t size) override;  // ptrace_map_program.cc
  Expected<void> write_tracer_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override {
    return raw_write(addr, bytes);
  }
  std::vector<uint64_t> user_breakpoints() const override;
  void resend_signal(pid_t tid, int signal) override { requeue_signal(tid, signal); }
  bool signal_waits(pid_t tid, int signal) override;  // ptrace_copy_program.cc
  bool stopping_all() const override { return stopping_all_; }
  bool non_stop() const override { return non_stop_; }
  Expected<int> step_now(pid_t tid) override;  // ptrace_debug.cc
  // Every int3 we keep in the program's memory (user breakpoints and the
  // tracer's) with the byte it hides: a forked child inherits them all and
  // must get the original bytes back before it runs untraced.
  std::shared_ptr<const ProgramBytes> inserted_int3s() const;

  // Whether debug registers really trap here (probed once in a child):
  // under some hypervisors the writes succeed and nothing ever fires. A
  // tracer needs this before relying on set_trace_stop.
  static bool debug_registers_work();

  // Reaps launched programs that were detached earlier and have exited since
  // (they stay our children). Never blocks.
  static void reap_detached_children();

 private:
  // What a thread's debug registers hold, to write only what changed.
  struct DebugRegs {
    std::array<uint64_t, 4> address{};
    uint64_t dr7 = 0;
  };
  struct ThreadState {
    bool running = false;
    bool stepping = false;
    StepKind requested = StepKind::Continue;  // what the client asked for
    StepKind last_kind = StepKind::Continue;  // what the kernel was told
    std::optional<uint64_t> reinsert_at;  // breakpoint lifted for a single-step
    bool sigstop_expected = false;        // our all-stop SIGSTOP is still to come
    bool stop_requested = false;          // non-stop: the client's vCont;t, reported as a stop with signal 0
    bool hit_retired_int3 = false;        // non-stop: trapped on a breakpoint removed since (handle_sigtrap)
    std::optional<ProcessEvent> pending;  // an event kept while stopping all
    uint64_t pending_pc = 0;              // pc when `pending` was kept
    std::vector<uint8_t> pending_siginfo; // its siginfo, when it was kept by keep_pending
    std::optional<StepKind> deferred;     // resume requested while another event is pending
    int deferred_signal = 0;
    std::optional<uint64_t> trace_stop;   // the tracer's slot-3 breakpoint
    DebugRegs written;                    // what DR0-3/DR7 hold in the kernel
    int last_signal = 0;                  // signal of the last stop (siginfo)
    int detach_signal = 0;                // deliver_on_detach
    int owed_signal = 0;                  // owe_signal: given on the next start
    // The stop is a ptrace_notify stop (si_code SIGTRAP: a step that
    // entered a signal handler), at which the kernel ignores a signal the
    // resume injects. Dropped by us at the client's resume instead: a
    // checkpoint or an emulated step taken meanwhile (under the tracer)
    // would leave the thread at a stop that delivers it.
    bool drops_injected_signal = false;
    std::vector<uint8_t> owed_siginfo;    // its siginfo, if it was the stop's own
    std::vector<uint64_t> trace_int3s;    // the tracer's int3s this thread holds a reference on
    // The tracer moved the pc (emulating a transfer) since the thread last
    // stopped there by itself: a user breakpoint under that pc has not been
    // hit yet, so a resume must run into it, not step off it (gdbserver
    // steps over a breakpoint only at the pc the thread stopped at).
    bool pc_moved_unrun = false;
    // pc_moved_unrun as it was at the last resume (raw_resume clears it):
    // the thread stops at our owed SIGSTOP before it runs anything when
    // the signal was queued then, and its pc is still unrun.
    bool unrun_at_resume = false;
    // Where its last stop was a signal's (not SIGTRAP): a breakpoint there
    // is still to be hit, not stepped off.
    std::optional<uint64_t> signal_stop_pc;
    // Where its resume runs into a user breakpoint under the pc rather than
    // stepping off it (start_thread): a step there runs the int3 too.
    std::optional<uint64_t> into_breakpoint;
    // The leader ended (pthread_exit) while other threads live on: a zombie
    // that reports nothing until they end too, so it is never stopped,
    // resumed, listed or detached again; kept for the process's exit status.
    bool exited = false;
    bool exit_events = false;  // PTRACE_O_TRACEEXIT set (sync_exit_events)
    // Its signal mask at its last resume, while the program has a SIGTRAP
    // handler (ptrace_trap_guard.cc), and whether its last stop came right
    // after a system call that sets the mask (or its last resume delivered
    // a signal).
    std::optional<uint64_t> mask_at_resume;
    bool after_mask_call = false;
    // Its stop is a SIGTRAP sent to it (kill, raise) while the program
    // ignores SIGTRAP: dropped, as the kernel would have dropped it.
    bool ignored_trap = false;
    // When btstub learned of it, against every other thread: threads()
    // lists in this order, as gdbserver does, so gdb numbers the first
    // thread 1 even where tids wrapped (pid_max) and a later thread got a
    // smaller tid. Each ThreadState made takes the next number, wherever
    // it is made (clone events, attach, exec).
    uint64_t creation = next_creation_number();
  };
  static uint64_t next_creation_number();
  struct TraceInt3 {
    uint8_t original = 0;
    // Who holds it: bookkeeping, not the program's bytes, so changed
    // without trace_int3s_.edit() (the tracer takes and lets go of int3s
    // at every stop; inserted_int3s() need not be rebuilt for that).
    mutable int refs = 0;
    // In code the program stores into (lift_trace_breakpoints): lifted
    // when the last reference goes, kept or not.
    bool lift_on_drop = false;
  };
  // Writes back the original byte of the trace int3 at `addr` unless the
  // program wrote another there (or gdb's own int3 holds it), and forgets it.
  void lift_trace_int3(uint64_t addr);

  PtraceProcess(pid_t pid, bool attached);

  // Waits for the first stop; then runs the `execs_before` execs of a shell
  // or wrapper that come before the program's own.
  Expected<void> finish_launch(int execs_before);
  void open_memory();
  std::vector<uint8_t> raw_read(uint64_t addr, std::size_t len);
  Expected<void> raw_write(uint64_t addr, const std::vector<uint8_t>& bytes);
  Expected<void> poke_write(uint64_t addr, const std::vector<uint8_t>& bytes);
  Expected<uint64_t> read_pc(pid_t tid);

  Expected<std::optional<ProcessEvent>> next_event(bool block);
  std::optional<ProcessEvent> take_pending();
  void restore_kept_siginfo(pid_t tid, ThreadState& thread);
  bool kept_event_stale(pid_t tid, const ThreadState& thread, StepKind next);
  Expected<void> require_stopped(pid_t tid) const;
  void requeue_signal(pid_t tid, int signal);
  // Signals an injected system call met (InjectedCall::signals_met), sent
  // again: the program's, but for an all-stop's SIGSTOP the thread owed.
  void give_back_signals_met(pid_t tid, const std::vector<int>& signals);
  // A system call of btstub's made in the program (inject_syscall). Its
  // end, met on the way (killed from outside) and reaped there, is given
  // back (give_back_end).
  Expected<ptrace_detail::InjectedCall> inject_in_program(pid_t tid, long number, std::vector<uint64_t> args);
  // Not made where the thread's seccomp filters would end the program for
  // the call (SECCOMP_RET_KILL_*, or strict mode) or show it to a
  // supervisor (SECCOMP_RET_USER_NOTIF): refused. Where they cannot be
  // read (btstub without CAP_SYS_ADMIN or under seccomp itself) it is made,
  // as before btstub read them.
  Expected<void> seccomp_lets_through(pid_t tid, long number, const std::vector<uint64_t>& args);
  // A status reaped inside btstub's own system call in the program goes
  // back to be reaped again by the event loop, which reports it: handled
  // on the spot, an end would take the thread's state (all of the
  // program's, for the leader) from under the stop or resume whose tracer
  // made the call. The thread counts as running, and a resume of it as
  // made (raw_resume).
  void give_back_end(pid_t tid, int status);
  void owe_signal(pid_t tid, ThreadState& thread, int signal);
  int take_owed_signal(pid_t tid, ThreadState& thread);
  void put_back_lifted_breakpoint(ThreadState& thread);
  void commit_deferred();
  std::optional<ProcessEvent> handle_status(pid_t tid, int status);
  std::optional<ProcessEvent> classify_stop(pid_t tid, ThreadState& thread, int signal);
  // A PTRACE_SYSCALL stop: reported when the client catches the call, else
  // the thread goes on.
  std::optional<ProcessEvent> syscall_stop(pid_t tid, ThreadState& thread);
  ProcessEvent handle_sigtrap(pid_t tid, ThreadState& thread, bool& trace_hit);
  bool still_in_stop(pid_t tid);
  std::optional<ProcessEvent> thread_gone(pid_t tid, int status);
  std::optional<ProcessEvent> no_resumed_left(pid_t gone);
  // held_step: a step with every other running thread held (step_held),
  // off the breakpoint under the pc.
  Expected<void> raw_resume(pid_t tid, ThreadState& thread, StepKind kind, int signal, bool held_step = false);
  // The program's SIGTRAP handler kept through our traps (ptrace_trap_guard.cc):
  // at a trap stop after a system call (`regs`), what it set; before each
  // resume, the handler and the mask put back where a trap of ours reset them.
  void note_trap_calls(ThreadState& thread, const user_regs_struct& regs);
  void keep_trap_handler(pid_t tid, ThreadState& thread, int signal);
  Expected<void> start_thread(pid_t tid, ThreadState& thread, StepKind kind, int signal);
  void handle_clone(pid_t parent);
  // ptrace_thread_ends.cc: holding the program's end (ProcessEvent::exit_held).
  std::optional<ProcessEvent> handle_exit_event(pid_t tid, ThreadState& thread);
  long ptrace_options(bool exit_events) const;
  void sync_exit_events(pid_t tid, ThreadState& thread);
  void resume_after_event_stop(pid_t parent);
  void handle_exec();
  std::optional<ProcessEvent> handle_fork(pid_t parent, bool vfork);  // ptrace_fork.cc
  // The tracer's int3s out of memory a vfork child shares, and back at the
  // parent's vforkdone (ptrace_fork.cc).
  void take_out_trace_int3s(pid_t parent, bool hold);
  std::optional<ProcessEvent> handle_vfork_done(pid_t tid, ThreadState& thread);
  void release_vfork_held(bool start);
  bool held_for_vfork(pid_t tid) const { return vfork_parent_ != 0 && tid != vfork_parent_; }
  std::vector<uint64_t> new_client_int3s(uint64_t addr, const std::vector<uint8_t>& bytes);
  // Whether the tracer traces any thread of the program.
  bool recording() const;
  // Whether the tracer's int3 at `addr` is in the program's memory now.
  bool trace_int3_written(uint64_t addr) const { return vfork_parent_ == 0 && trace_int3s_.count(addr) != 0; }
  void mark_gone();
  void stop_running_thread(pid_t tid, bool send_sigstop);
  std::optional<ProcessEvent> take_pending_non_stop();
  void stop_all_threads(pid_t except);
  pid_t wait_for_stop(pid_t tid, int* status);
  bool leader_is_zombie() const;
  void leader_exited();
  void reap_ended_threads(pid_t except);
  Expected<void> detach_threads();
  void reap_killed_while_detaching(pid_t tid);
  void keep_while_stopping(pid_t tid, int status);

  // Debug registers (ptrace_debug.cc).
  DebugRegs wanted_debug_regs(const ThreadState& thread) const;
  Expected<void> sync_debug_regs(pid_t tid, ThreadState& thread);
  void sync_all_debug_regs();
  uint64_t take_dr6(pid_t tid, const ThreadState& thread);
  TracedStop traced_stop(pid_t tid, const ProcessEvent& event, bool trace_hit) const;

  // The tracer's int3s (ptrace_debug.cc, ptrace_events.cc).
  Expected<void> add_trace_int3(uint64_t addr);
  void drop_trace_int3(uint64_t addr);
  void release_trace_int3(pid_t tid);
  void remove_all_trace_int3s();
  bool was_trace_int3(uint64_t addr);
  bool pass_untraced_trace_hit(pid_t tid, ThreadState& thread, uint64_t pc);
  Expected<void> step_held(pid_t tid, ThreadState& thread, uint64_t pc, int signal);
  bool step_may_block(uint64_t pc, uint8_t first_byte);
  std::vector<pid_t> hold_others(pid_t tid);
  void release_held(const std::vector<pid_t>& held);
  pid_t reap(pid_t want, int* status, int flags);
  bool in_replay(pid_t tid) const;

  pid_t pid_ = 0;
  bool attached_ = false;
  // A fork child followed or adopted is its parent's child, not btstub's:
  // a copy of it (clone with CLONE_PARENT) would be that parent's child
  // too, seen by its wait(__WALL) and left as its zombie.
  bool btstub_is_parent_ = true;
  bool alive_ = true;
  // The memory map_shared_program_memory shared with the program: btstub's
  // own, never privatized into a copy (which lacks it: MADV_DONTFORK).
  // Matched by range and the memfd's inode, so that memory of the
  // program's own mapped there later is still the program's.
  struct TracerSharedArea {
    uint64_t begin = 0, end = 0, inode = 0;
  };
  std::vector<TracerSharedArea> tracer_shared_;
  // Everything map_program_memory and map_shared_program_memory mapped into
  // the program (begin, size): unmapped when btstub lets the program go
  // (detach, every thread stopped), so that no code cache or log of ours
  // stays in it.
  std::vector<std::pair<uint64_t, uint64_t>> tracer_mappings_;
  void unmap_tracer_memory();
  // Held at its end (ProcessEvent::exit_held): the first thread sits in its
  // exit stop, where it can only be let go (no tracer, no injected call).
  bool ending_ = false;
  int mem_fd_ = -1;
  std::map<pid_t, ThreadState> threads_;
  CountedMap<uint64_t, uint8_t> breakpoints_;  // address -> original byte
  // int3s the client wrote into memory itself (M/X: gdb with Z packets off
  // writes its breakpoints), where the program had another byte: their
  // traps are reported as breakpoints (swbreak, pc on the int3), as
  // gdbserver does. The program's own int3s stay its SIGTRAPs.
  std::set<uint64_t> client_int3s_;
  bool stopping_all_ = false;          // inside stop_all_threads
  bool non_stop_ = false;              // set_non_stop: an event stops its own thread only
  // Non-stop: addresses of user breakpoints removed while threads ran; a
  // trap a thread had there before the removal is stale, not a SIGTRAP.
  std::set<uint64_t> retired_user_int3s_;
  std::set<int> pass_signals_;
  // The system calls whose entries and returns stop a continue (an empty
  // set: every one); nullopt: none (QCatchSyscalls).
  std::optional<std::set<int>> caught_syscalls_;
  bool thread_events_ = false;
  TraceHook* hook_ = nullptr;
  DebugRegisterState user_debug_;      // Z1-Z4, the same on every thread
  pid_t last_reported_ = 0;            // fairness among pending events
  CountedMap<uint64_t, TraceInt3> trace_int3s_;  // the tracer's int3s by address (refs 0: kept)
  // inserted_int3s(), shared by checkpoints, and the two maps' change
  // counts when it was made.
  mutable std::shared_ptr<const ProgramBytes> last_inserted_int3s_;
  mutable std::pair<uint64_t, uint64_t> last_inserted_changes_{0, 0};
  bool keep_trace_int3s_ = false;
  // Every address that ever held one of the tracer's int3s: a thread that
  // hit one just before it was removed reports the trap afterwards.
  std::set<uint64_t> retired_int3s_;
  // Wait statuses reaped early (while holding threads for step_held), to be
  // handled as if waitpid returned them now.
  std::deque<std::pair<pid_t, int>> replay_;
  // waitpid(-1) returns the first ready tracee in the kernel's list: a
  // thread the tracer stops and resumes at once (a spin loop stepped
  // through, translated code filling its log) is ready every time, and
  // the stops of threads later in the list would wait forever behind it,
  // or behind two such threads taking turns (four threads at a spin
  // barrier, pinned to one CPU: the two spinning were served, the two
  // still to arrive never resumed; test_thread_fairness). After every
  // kFairnessEvery statuses from waitpid(-1), up to kFairnessLook other
  // threads are looked at (one waitpid each), in tid order round from
  // where the last look ended, and the first ready one is taken
  // (reap_other, ptrace_events.cc). At 16 statuses of one thread in a row,
  // a thread the tracer steps through a sleep every half millisecond kept
  // another's signal stop waiting 8 ms each time, slower than its signals
  // came (test_signal_flood_stops).
  static constexpr int kFairnessEvery = 2;
  static constexpr std::size_t kFairnessLook = 8;
  int since_look_ = 0;      // statuses from waitpid(-1) since the last look
  pid_t looked_last_ = 0;   // the last thread a look reached
  pid_t last_served_ = 0;   // the thread whose status was handled last
  pid_t reap_other(pid_t served, int* status);
  std::vector<pid_t> threads_in_turn_after(pid_t last) const;
  // Fork events (ptrace_fork.cc): whether to report them, and the child of
  // the last one, held stopped with the user int3s it inherited.
  struct HeldChild {
    pid_t pid = 0;
    bool vfork = false;
    std::map<uint64_t, uint8_t> int3s;  // address -> original byte, in the child
  };
  bool fork_events_ = false;
  bool vfork_events_ = false;
  std::optional<HeldChild> held_child_;
  // The thread whose vfork child shares our memory (0: none): from its
  // vfork event to its vforkdone the tracer's int3s stay out of memory
  // (trace_int3s_ still lists them) and every other thread stays stopped.
  pid_t vfork_parent_ = 0;
  bool vfork_reported_ = false;   // the client heard of that vfork (vfork events)
  bool recheck_pending_ = false;  // a thread held for a vfork has a pending event to report
  // The whole process ended while its threads were being stopped for
  // another's event (all-stop): reported by the next poll, not lost.
  std::optional<ProcessEvent> ended_while_stopping_;
  // SIGTRAP's handler as the program set it (the kernel's struct
  // sigaction: handler, flags, restorer, mask); nullopt while it has none
  // (default, ignored, or one that resets itself), or none is known.
  std::optional<std::array<uint64_t, 4>> trap_handler_;
  // The program set SIGTRAP to SIG_IGN (and left it so): our traps reset
  // the kernel's to SIG_DFL, so a SIGTRAP sent to it is dropped here, and
  // rt_sigaction tells the program SIG_IGN.
  bool trap_ignored_ = false;
};

}  // namespace stub::process
