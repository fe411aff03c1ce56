#pragma once
// Branch tracing in software, for machines without BTS or PT: each traced
// thread runs freely to the next control transfer, where a debug-register
// execution breakpoint (the "trace stop") catches it before the transfer
// runs; the tracer computes where the transfer goes, re-arms the trace stop
// at the end of the target's block and lets the thread go on. One ptrace
// stop per taken or not-taken branch; single steps only where the outcome
// cannot be computed beforehand (syscalls, signal delivery, one-block loops).
//
// TraceStops::Breakpoint (software_tracer_emulate.cc) uses an int3 as the
// trace stop instead, for machines whose debug registers never trap. The
// int3 stays in place for other threads, so the transfer under it is not
// run but emulated: rip, and rsp/[rsp]/rcx for calls, returns and loops.
// The branch is then certain and stored at once (nothing is pending).
// With int3s the tracer also runs conditional branches and direct jmp/call
// without a stop of their own where it can tell afterwards which way the
// thread went (software_tracer_lookahead.cc).
//
// Exactness rule: a branch is stored only once the thread is seen past it.
// Between the trace stop at a branch and that evidence the branch is
// "pending" (see ThreadState::pending), because a signal may stop the thread
// before the branch runs. Only a target the thread computes from its own
// registers and the code may be pending: one read from memory (a return
// slot, a GOT entry another thread's lazy binding rewrites) can change
// before the thread runs the transfer, which would then go where no trace
// stop is armed; such transfers are emulated at the stop, as under int3s.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/instruction.h"
#include "stub/tracing/background_packer.h"
#include "stub/tracing/checkpoints.h"
#include "stub/tracing/code_writes.h"
#include "stub/tracing/map_changes.h"
#include "stub/tracing/software_tracer_blocks.h"
#include "stub/tracing/trace_backend.h"
#include "stub/process/trace_hook.h"

namespace stub::tracing {

using process::StepKind;
using process::TraceHook;
using process::TraceVerdict;
using process::TracedStop;
using process::TracedThreadControl;

// How the tracer gets the thread back at a block's end.
enum class TraceStops {
  DebugRegister,  // TracedThreadControl::set_trace_stop: one stop per block
  SingleStep,     // for machines whose debug registers never trap (some
                  // hypervisors: see PtraceProcess::debug_registers_work):
                  // every instruction is stepped, exact but one stop each
  Breakpoint,     // TracedThreadControl::set_trace_breakpoint: an int3 at
                  // each block's transfer, which is emulated; blocks ending
                  // in a syscall (or anything not emulable) are stepped
};

class SoftwareTracer final : public TraceHook, public TraceBackend {
 public:
  // `enable_all`: trace every thread from the start (--record).
  static Expected<std::unique_ptr<SoftwareTracer>> create(const TraceConfig& config = {},
                                                          bool enable_all = false,
                                                          TraceStops stops = TraceStops::DebugRegister);
  TraceStops trace_stops() const { return stops_; }

  // Optional: lets enable()/disable() read the thread's pc and disarm its
  // trace stop at once. Without it the origin is taken at the thread's next
  // resume and the disarm happens then.
  void set_control(TracedThreadControl* control) { control_ = control; }

  // Under enable_all, threads the tracer was never told about (the main
  // thread at launch, threads present at attach) are traced from their first
  // resume; adopting them (stopped) starts their traces now, so the client
  // can read an empty trace before the first resume.
  void adopt_threads(const std::vector<pid_t>& tids);
  // A new inferior (vRun, attach after detach): forget every thread and all
  // decoded code; configuration and enable_all stay.
  void forget_process();

  // Counters for tests and benchmarks.
  struct Stats {
    uint64_t stops = 0;        // stops of traced threads seen by on_stop
    uint64_t absorbed = 0;     // ... of which the tracer absorbed
    uint64_t trace_stops = 0;  // trace-stop hits
    uint64_t steps = 0;        // single steps the tracer itself asked for
    uint64_t branches = 0;     // branches stored
    uint64_t emulated = 0;     // transfers emulated (TraceStops::Breakpoint)
    uint64_t looked_past = 0;  // transfers run without a stop of their own
  };
  const Stats& stats() const { return stats_; }
  // Checkpoints under whole-program recording (stub/tracing/checkpoints.h);
  // nullopt takes none.
  void set_checkpoint_limits(std::optional<Checkpoints::Limits> limits);
  // Where the packing workers run (BackgroundPacker), if set before the
  // first trace starts.
  void set_packer_placement(PackerPlacement placement) { packer_placement_ = std::move(placement); }
  const PackerPlacement& packer_placement() const { return packer_placement_; }
  // Forgets decoded code (e.g. after the client wrote into code).
  void invalidate_code() { forget_code(); }
  // Whether every thread of the program is traced (and so every system
  // call it makes is stepped and seen here).
  bool every_thread_traced() const;
  // Told of each system call a traced thread made, judged once at the stop
  // after its step: the translating tracer drops translations and
  // re-reads the maps by it.
  using SystemCallObserver = std::function<void(const SystemCall&, const CodeWrite&)>;
  void observe_system_calls(SystemCallObserver observer) { system_call_observer_ = std::move(observer); }

  // ---- lending a thread to the translating tracer (software_tracer_lending.cc) ----
  // The thread stands at an original pc with everything before it in its
  // trace (a stop the client saw, one of the tracer's own, or one of the
  // translated code's). Lent, the tracer takes a checkpoint if one is due
  // there, disarms the thread's trace stops and forgets its plans; the
  // borrower runs it and stores its branches with store_lent_branch until
  // take_back. False (nothing changed) when it cannot be lent: not traced,
  // frozen or full, a step in flight.
  bool lend_thread(TracedThreadControl& control, pid_t tid);
  // A branch the lent thread took, with rsp/rbp as before it. False when
  // the trace is full under the stop policy (stopped_full then says so).
  bool store_lent_branch(pid_t tid, uint64_t from, uint64_t to, const decoder::StackSnapshot& stack);
  // A run of them, in order: how many were stored (fewer: the trace is
  // full under the stop policy, or the thread is not traced).
  // With a `lender`, the trace may borrow their memory until
  // return_lent_memory (decoder::BlockTrace::append_stacked).
  std::size_t store_lent_branches(pid_t tid, std::span<const decoder::StackedBranch> branches,
                                  const std::shared_ptr<const void>& lender = nullptr);
  // Until `tid`'s trace no longer reads memory store_lent_branches lent it
  // (with `lender`: lent with that lender).
  void return_lent_memory(pid_t tid, const void* lender = nullptr);
  // Branches `tid`'s trace surely still takes under --trace-full=stop (by
  // count and by the memory cap: BlockTrace::room); none: it never stops.
  std::optional<std::size_t> room_for_lent(pid_t tid) const;
  // Whether a checkpoint is due where the lent thread has got to.
  bool checkpoint_wanted(pid_t tid) const;
  // Takes the lent thread back where it stands (an original pc, its trace
  // complete up to it) and goes on as at one of its own trace stops: the
  // verdict for the stop it is in.
  TraceVerdict take_back(TracedThreadControl& control, pid_t tid);

  // Which threads run the program's code (software_tracer_idle.cc): told
  // around every stop and resume by the outermost hook (this one, or the
  // translating tracer that wraps it). A program with several threads gets
  // checkpoints of one only while the others run none.
  void note_stopped(pid_t tid);
  void note_resumed(TracedThreadControl& control, pid_t tid, StepKind kind, int signal);
  // After on_stop's verdict: the thread goes on (Continue, SingleStep) unless
  // the process layer is stopping every thread.
  void note_verdict(TracedThreadControl& control, pid_t tid, TraceVerdict verdict);

  // ---- TraceHook ----
  bool traces(pid_t tid) const override;
  StepKind before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) override;
  TraceVerdict on_stop(TracedThreadControl& control, const TracedStop& stop) override;
  void on_held(TracedThreadControl& control, pid_t tid) override;
  void on_thread_created(pid_t tid, pid_t parent) override;
  void on_thread_exited(pid_t tid) override;
  void on_exec(pid_t tid) override;
  bool pass_trace_breakpoint(TracedThreadControl& control, pid_t tid) override;
  bool uses_debug_register() const override { return stops_ == TraceStops::DebugRegister; }
  bool holds_exit() const override { return all_enabled_; }
  bool uses_breakpoints() const override { return stops_ == TraceStops::Breakpoint; }

  // ---- TraceBackend ----
  std::string_view name() const override { return "software"; }
  void set_config(const TraceConfig& config) override { config_ = config; }
  TraceConfig config() const override { return config_; }
  Expected<void> enable(pid_t tid) override;
  Expected<void> disable(pid_t tid) override;
  bool enabled(pid_t tid) const override;
  Expected<void> enable_all() override;
  void disable_all() override;
  bool all_enabled() const override { return all_enabled_; }
  const decoder::BlockTrace* trace(pid_t tid) const override;
  void settle_traces() override;
  Expected<TraceConfig> thread_config(pid_t tid) const override;
  bool stopped_full(pid_t tid) const override;
  Expected<void> set_bound(uint64_t buffer_bytes) override;
  Checkpoints* checkpoints() const override { return checkpoints_.get(); }
  const MapChanges* map_changes() const override { return &map_changes_; }
  void client_wrote(uint64_t begin, uint64_t end) override;
  void client_wrote_registers(pid_t tid, uint64_t pc_before, const decoder::StackSnapshot& stack_before) override;
  // Its Stats, for monitor record status.
  std::string activity() const override;

 private:
  // TraceStops::Breakpoint: transfers a thread runs without a stop of its
  // own (software_tracer_lookahead.cc). From the entry transfer the thread
  // walks down a tree of hops, straight runs of code [begin, end] whose end
  // is their only transfer: a hop ending in a direct jmp/call has one child,
  // one ending in a conditional branch two (taken, fall-through); the ends of
  // the leaves are armed. Where the thread next stops says which hop it is
  // in, hence its path and every branch on it.
  struct Hop {
    uint64_t begin = 0, end = 0;
    int parent = -1;          // index in Lookahead::hops; -1: the entry
    bool taken_edge = false;  // entered by a taken branch (stored), not by falling through
    bool end_is_call = false;
    bool leaf = true;
    int64_t rsp_delta = 0;  // BlockEnd::rsp_delta (0 where unknown: then never needed)
  };
  struct Lookahead {
    uint64_t entry = 0;
    bool entry_is_call = false;
    std::vector<Hop> hops;
    std::vector<uint64_t> leaves;  // the armed ends
  };
  // A single step in flight and what it was expected to do.
  struct Step {
    uint64_t from = 0;
    decoder::StackSnapshot stack;              // rsp/rbp at `from`, before it ran
    std::optional<decoder::Instruction> insn;  // nullopt: undecodable
    bool predicted_branch = false;             // next_pc said Branch
    bool by_tracer = false;                    // we turned a Continue into it
    // A system call's: the program's shared memory before it ran, for the
    // barrier it makes (Checkpoints::barrier; nullopt: not read).
    std::optional<uint64_t> shared_before;
    // A clone's flags as the program gave them, where the step runs it
    // without CLONE_UNTRACED (traced_clone): put back once it ran.
    struct ClonedFlags {
      uint64_t flags = 0;
      uint64_t at = 0;  // clone3's argument block; 0: clone's rdi
    };
    std::optional<ClonedFlags> untraced_flags;
  };
  struct ThreadState {
    bool enabled = false;
    bool exited = false;
    bool disarm_pending = false;  // disabled without control: disarm at next resume
    bool origin_known = false;
    bool frozen = false;          // full under OverflowPolicy::Stop: no more recording
    bool stopped_full = false;    // the current stop is because of that
    bool in_stop = false;         // on_stop is deciding (a stop may be reported)
    std::optional<uint64_t> exit_reported;  // where the thread was reported about to exit
    bool checkpoint_due = true;   // something re-execution cannot repeat happened since the last one
    int last_delivered = 0;       // the signal last delivered to the thread (host number)
    // No copies before the thread's history reaches this many branches:
    // its last signal came again while a copy was being taken (see
    // checkpoint_if_due).
    uint64_t copies_resume_at = 0;
    // Where the thread's last signal handler returned (rt_sigreturn's
    // landing) and its history's length then: a signal delivered there
    // with nothing run since finds the thread doing nothing but handlers.
    std::optional<decoder::HistoryPoint> handler_returned;
    // A signal interrupted the thread in the vDSO (its history's length
    // then), and its handler has not returned yet (other_in_vdso).
    std::optional<uint64_t> vdso_interrupted;
    // May be running code of the program now: not stopped, nor in a wait
    // it was stepped into (note_resumed). Unknown counts as running.
    bool runs_code = true;
    bool client_wrote = false;    // the client wrote memory at this stop (noted where it resumes)
    // Where the thread stood when the client first wrote its registers at
    // this stop, and rsp/rbp there: if it resumes elsewhere, the move is
    // stored as an asynchronous transfer (as a signal's delivery).
    std::optional<std::pair<uint64_t, decoder::StackSnapshot>> moved_from;
    TraceConfig config;
    std::unique_ptr<decoder::BlockTrace> trace;
    std::vector<uint64_t> armed;                  // trace stop addresses as last set (empty: none)
    std::optional<decoder::Branch> pending;       // seen at a trace stop, not yet seen run
    decoder::StackSnapshot pending_stack;         // rsp/rbp at pending->from
    std::optional<Step> step;
    std::shared_ptr<const Lookahead> lookahead;   // the plan its armed ends belong to
  };
  enum class Next { Continue, SingleStep, Report, StopBeforeExit };

  SoftwareTracer(BlockCache blocks, const TraceConfig& config, bool enable_all, TraceStops stops);

  ThreadState* state(pid_t tid);
  const ThreadState* state(pid_t tid) const;
  ThreadState* traced_state(pid_t tid);  // creates one under enable_all
  // `stopped`: the thread is stopped, so its pc can be read now.
  void start_trace(ThreadState& t, pid_t tid, bool stopped);
  void ensure_origin(ThreadState& t, uint64_t pc);

  // Where a thread resumes at another pc than the client found it at: the
  // branch it seemed about to take never ran, and the history goes from
  // there to `pc` as a signal's delivery does (the decoder walks across).
  void note_client_move(ThreadState& t, uint64_t pc);
  void settle(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc, bool step_completed);
  void settle_abort(TracedThreadControl& control, ThreadState& t, const Step& s, uint64_t pc);
  bool store(ThreadState& t, uint64_t from, uint64_t to, const decoder::StackSnapshot& stack);
  // For a block in code that may change (changeable_code_), ending at
  // `from`: the layout it ran, as the trace keeps it
  // (decoder::BlockTrace::note_block_code); nullopt elsewhere.
  std::optional<uint64_t> code_ran(const ThreadState& t, uint64_t from);
  bool refuses_more(const ThreadState& t) const;

  Next continue_from(TracedThreadControl& control, ThreadState& t, pid_t tid);
  Next plan_from(TracedThreadControl& control, ThreadState& t, pid_t tid);  // continue_from's choice
  Next at_transfer(TracedThreadControl& control, ThreadState& t, pid_t tid,
                   const protocol::RegisterFile& regs, const decoder::Instruction& insn);
  // A clone that would make an untraced process sharing the memory
  // (CLONE_VM | CLONE_UNTRACED: LeakSanitizer's, which stops the program's
  // threads from it) runs traced: untraced, it ran into the tracer's int3s
  // in the shared code and died of SIGTRAP, and the program waited for it
  // for good. Returns the flags to put back once the call ran.
  std::optional<Step::ClonedFlags> traced_clone(TracedThreadControl& control, pid_t tid,
                                               const protocol::RegisterFile& regs);
  // Puts `flags` where the clone reads them (rdi, or clone3's block).
  static bool write_clone_flags(TracedThreadControl& control, pid_t tid, const Step::ClonedFlags& flags);
  Next step_over(ThreadState& t, const protocol::RegisterFile& regs, std::optional<decoder::Instruction> insn,
                 bool predicted_branch);
  // TraceStops::DebugRegister at a transfer whose target is read from
  // memory (a return, `jmp *GOT`): made by the tracer, not left pending.
  Next take_transfer(TracedThreadControl& control, ThreadState& t, pid_t tid, protocol::RegisterFile regs,
                     const decoder::Instruction& insn);
  Next step_one(TracedThreadControl& control, ThreadState& t, const protocol::RegisterFile& regs);
  Next full_stop(ThreadState& t);
  // Whole-program recording (enable_all): a thread about to run exit_group
  // is stopped and reported first, once, so the history can still be
  // walked from the end; the client's next resume runs it.
  bool stops_before(ThreadState& t, const decoder::Instruction& insn, const protocol::RegisterFile& regs);
  bool arm(TracedThreadControl& control, ThreadState& t, pid_t tid, std::optional<uint64_t> addr);
  bool arm_all(TracedThreadControl& control, ThreadState& t, pid_t tid, const std::vector<uint64_t>& addrs);
  // Tells the process layer whether int3s may stay at transfers no thread
  // is armed on (TracedThreadControl::keep_trace_breakpoints).
  void update_kept_int3s(TracedThreadControl& control) const;
  void forget_code();
  // Code the program changes with plain stores (translatable_code.h
  // writable_code: an RWX page a JIT writes, .text made writable) gets no
  // trace stop (an int3 there is overwritten unseen, a debug-register stop
  // missed when the block changes before it) and nothing decoded there is
  // kept: its instructions are stepped. Code that may change at all
  // (changeable_code) stays out of PT chunks (start_trace). Both read
  // again before the next plan after a system call that may map such code,
  // an exec, a new process.
  void ensure_code_map(TracedThreadControl& control, pid_t tid);
  // At the stop after a system call the tracer stepped: the int3s and
  // cached blocks in code the call may have stored into
  // (stub/tracing/code_writes.h) are made right.
  // `regs`: the thread as the call left it.
  void after_system_call(TracedThreadControl& control, pid_t tid, const protocol::RegisterFile& regs);
  // After a step over `insn`, a `syscall` the thread made (`regs` as the
  // call left it): when copies can make that call again themselves
  // (process/repeated_call.h), noted as such, and true: no barrier, no
  // checkpoint owed.
  bool note_repeated_call(ThreadState& t, pid_t tid, const decoder::Instruction& insn,
                          const protocol::RegisterFile& regs);
  // Notes what the call changed of the memory map (map_changes_).
  void note_map_changes(pid_t tid, const SystemCall& call, uint64_t result, const CodeWrite& write);
  // software_tracer_checkpoints.cc.
  // A barrier at `pc`, with the program's shared memory as it is now.
  void note_unrepeatable(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc);
  // The same with the shared memory as read before (a system call's).
  void note_barrier(ThreadState& t, pid_t tid, uint64_t pc, std::optional<uint64_t> shared_digest);
  // The digest of the program's shared memory a barrier now needs
  // (Checkpoints::shared_ranges_due); nullopt when none does.
  std::optional<uint64_t> shared_digest_due(TracedThreadControl& control, pid_t tid) const;
  // Where a thread the client wrote memory under resumes: older copies
  // may not run past `pc` (Checkpoints::client_write), a new one is due.
  // True when there was such a write.
  bool note_client_write(ThreadState& t, pid_t tid, uint64_t pc);
  void checkpoint_if_due(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc);
  void note_signal_flood(ThreadState& t, uint64_t pc);
  // Branches the thread has recorded (what the periodic spacing grows with;
  // also those a full trace dropped since).
  static uint64_t recorded_branches(const ThreadState& t) { return t.trace ? t.trace->end_sequence() : 0; }
  // software_tracer_idle.cc. The other threads that run no code (each
  // stopped or waiting): a copy of `tid` stands for the program while all
  // others are among them.
  std::vector<pid_t> idle_others(pid_t tid) const;
  bool other_in_vdso(TracedThreadControl& control, pid_t tid) const;
  bool has_others(pid_t tid) const;
  // Where the thread stands in a system call the kernel makes again when
  // it resumes without a signal (a futex wait an all-stop interrupted):
  // the `syscall` instruction's address.
  std::optional<uint64_t> restarted_call(TracedThreadControl& control, const protocol::RegisterFile& regs);
  std::optional<TraceVerdict> step_over_restart(TracedThreadControl& control, ThreadState& t, pid_t tid);
  // Resumed with one step, does the thread wait and run no code of the
  // program before it stops (a futex wait, a sleep)?
  bool steps_into_wait(TracedThreadControl& control, pid_t tid);
  // At a resume of a program with several threads, where the others stand
  // still: a checkpoint here, unless one serves here already.
  void checkpoint_alone(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc);
  StepKind plan_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal);
  TraceVerdict judge_stop(TracedThreadControl& control, const TracedStop& stop);

  // TraceStops::Breakpoint (software_tracer_emulate.cc).
  Next continue_by_emulation(TracedThreadControl& control, ThreadState& t, pid_t tid,
                             protocol::RegisterFile regs);
  bool emulate(TracedThreadControl& control, pid_t tid, protocol::RegisterFile& regs,
               const decoder::Instruction& insn, uint64_t& target, bool& taken);
  // software_tracer_lookahead.cc.
  bool arm_past(TracedThreadControl& control, ThreadState& t, pid_t tid, const decoder::Instruction& entry);
  std::shared_ptr<const Lookahead> plan_past(const decoder::Instruction& entry, decoder::CodeReader& code);
  int add_hops(Lookahead& plan, uint64_t start, int parent, bool taken_edge, bool needs_rsp, int depth,
               std::vector<uint64_t>& used, decoder::CodeReader& code);
  void settle_lookahead(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc);

  BlockCache blocks_;
  AddressRanges writable_code_;    // see ensure_code_map
  AddressRanges changeable_code_;  // read by the traces' packing (LiveCode)
  bool code_map_stale_ = true;
  TraceStops stops_;
  TraceConfig config_;
  bool all_enabled_ = false;
  int taken_in_a_row_ = 0;  // take_transfer's emulations within one stop
  bool any_frozen_ = false;     // since the last enable_all: some thread runs untraced
  bool untraced_met_ = false;   // since the last enable: an untraced thread met a kept int3
  TracedThreadControl* control_ = nullptr;
  std::map<pid_t, ThreadState> threads_;
  // Packs every trace's chunks on worker threads (made with the first trace).
  std::shared_ptr<decoder::ChunkPacker> packer_;
  PackerPlacement packer_placement_;
  // Plans by entry transfer address (null: it gets a stop of its own),
  // shared with the threads following them (plans are made per stop).
  // Decided once, so that no int3 is ever put on a transfer some plan runs
  // without a stop (passed_); the ends plans arm are never passed
  // (must_stop_). Both only save stops: a plan stays exact even if an int3
  // sits on a transfer it passes (the thread stops there, inside a hop).
  std::unordered_map<uint64_t, std::shared_ptr<const Lookahead>> plans_;
  std::unordered_set<uint64_t> passed_;
  std::unordered_set<uint64_t> must_stop_;
  Stats stats_;
  std::unique_ptr<Checkpoints> checkpoints_;
  MapChanges map_changes_;  // since the last enable_all
  // Where the program's heap ends, as the last brk `tid` made left it
  // (note_repeated_call): only while that thread is the only one the
  // process has had since, every one of its calls seen. A brk of another
  // thread would go unseen by it, so a new thread, an exec, and any start
  // or end of tracing forget it (forget_brk).
  struct KnownBrk {
    pid_t tid = 0;
    uint64_t end = 0;
  };
  std::optional<KnownBrk> known_brk_;
  void forget_brk() { known_brk_.reset(); }
  // A process sharing the memory that is not one of our threads (clone
  // with CLONE_VM alone) exists or existed since the exec: its brk is never
  // seen, so no heap end is known until the next program.
  bool heap_shared_ = false;
  SystemCallObserver system_call_observer_;
};

}  // namespace stub::tracing
