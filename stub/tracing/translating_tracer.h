#pragma once
// The translating tracer (issue 28; --trace-stops=translate): a traced
// thread runs translations of the program's blocks (decoder/
// block_translator.h) in a code cache btstub maps into the program; they
// log each taken branch into a per-thread log in the program's memory
// (addressed through the gs base) and trap to btstub (an int3) only where
// the cache cannot go on by itself: an untranslated direct target, every
// indirect transfer whose target is not in the thread's indirect-target
// table yet (the tracer enters it there), a full log.
//
// The ptrace tracer (SoftwareTracer, int3 trace stops) stays the owner of
// every trace, checkpoint and configuration: this tracer borrows a thread
// from it (SoftwareTracer::lend_thread), hands it the branches the cache
// logged (drained at every stop, in order, with rsp/rbp as the ptrace
// tracer stores them), and gives it back (take_back) for whatever the cache
// does not run:
//   - a block whose first instruction is a system call, int3/ud2/hlt,
//     rdtsc/rdtscp/rdrand/rdseed, a far transfer, xbegin, anything using
//     gs, or undecodable (VEX/EVEX forms Capstone does not know are
//     copied); a user breakpoint's address (a translation ends
//     before one and never starts at one);
//   - code outside non-writable mappings of named files
//     (stub/tracing/translatable_code.h): the vDSO, anonymous or writable
//     memory (JITs, code written then run), memfd and deleted files;
//   - a resume with a signal, a single step, a thread at a user
//     breakpoint, while any hardware breakpoint or watchpoint is in, in
//     non-stop mode while the program has more than one thread (the client
//     changes breakpoints while threads run translations made without
//     them), a thread stopped in a system call the kernel restarts when
//     it resumes (it moves the pc back onto the `syscall`), and a trace
//     that is frozen or full;
//   - any translation that fails (e.g. a RIP-relative operand out of reach
//     of every cache region that could be mapped).
// The thread comes back into the cache at the first of the ptrace
// tracer's own stops that lets it go on by a continue.
//
// The program never sees the cache: at every stop that reaches anything
// above the tracer (the client, the session, the ptrace tracer's own
// logic) the thread is out of it, its pc the original address, its gs base
// the program's; at a resume it goes back in. A stop inside the
// instrumentation (a signal between two of its instructions) is repaired
// first: a fault there is undone (decoder::FaultPoint), anything else is
// single-stepped to the next clean point, and a signal that came meanwhile
// is sent again once the thread stands there.
//
// Threads. Every thread has its own area (log, slots, indirect-target
// table; its gs base), mapped when it first enters (by an mmap it makes,
// every other thread held meanwhile) and handed on to a new thread when it
// ends; a thread the program creates enters at its first resume.
// Where a CPU is spare (the packer's) and btstub shares the areas, a
// thread has two, their tables kept the same: at each exit it goes on in
// the other one while the log it filled is encoded on the spare CPU
// straight from where it lies (one job of its whole chunks,
// decoder::LentRun); at its next exit btstub's thread takes whatever the
// worker has not begun, so it never waits for more than a chunk. Several
// threads run in the cache at once. All-stop: a thread in the cache that
// the process layer stops because another thread reported (on_held), or
// whose own exit comes while every thread is being stopped, is moved out
// as above (its log drained, stepped out of the instrumentation first if
// need be: a step it takes at once, TracedThreadControl::step_now) and left
// stopped outside, lent; its next resume puts it back.
// Code shared by running threads is never rewritten under them: new
// translations go to unused cache memory; a direct exit is linked (its
// rel32 rewritten) only while no other thread is in the cache, else the
// link waits for such a moment; and translations to be dropped stay until
// every thread is out (each leaves at its next exit, nobody enters
// meanwhile).
//
// Translations are dropped when the client's breakpoints change, when the
// translatable code changed (the maps are re-read after a system call that
// may change them, a stop the client saw, or, while some thread runs
// untraced, after every stint under the ptrace tracer, where every system
// call runs), and after a system call that may have stored into
// translated code without changing the maps (stub/tracing/code_writes.h:
// /proc/PID/mem, the mapped file, an mprotect made and undone).
#include <sys/types.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "decoder/block_translator.h"
#include "stub/process/page_size.h"
#include "stub/process/trace_hook.h"
#include "stub/tracing/code_writes.h"
#include "stub/tracing/heap_prefault.h"
#include "stub/tracing/software_tracer.h"
#include "stub/tracing/trace_backend.h"
#include "stub/tracing/translatable_code.h"
#include "stub/tracing/translation_cache.h"

namespace stub::tracing {

class TranslatingTracer final : public TraceHook, public TraceBackend {
 public:
  // Takes the ptrace tracer to borrow threads from (int3 trace stops).
  static Expected<std::unique_ptr<TranslatingTracer>> create(std::unique_ptr<SoftwareTracer> ptrace);

  SoftwareTracer& ptrace_tracer() { return *ptrace_; }
  void set_control(TracedThreadControl* control) { ptrace_->set_control(control); }
  void adopt_threads(const std::vector<pid_t>& tids);
  void forget_process();

  // Records per thread in the in-program log (32 bytes each), at most: under
  // whole-program recording with checkpoints the log holds one checkpoint
  // interval, so that a full log stops the thread where the ptrace tracer
  // would take its next copy (reverse execution then re-runs no further).
  // 256 Ki records (8 MiB a log, three a thread, shared: only what a thread
  // writes is resident): each full log is a ptrace stop (and, with a spare
  // CPU, a switch to another log), about 70 us of the program's CPU and
  // btstub's thread; at 16 Ki those were two thirds of Lua's stops, and
  // 64 Ki against 256 Ki still left Lua's recording 1.15x as long
  // (docs/performance.md).
  static constexpr uint64_t kLogCapacity = 256 * 1024;
  // A thread's area as mapped: the log of kLogCapacity records below the
  // gs base, the slots and table above it, whole pages.
  static constexpr uint64_t kAreaLogBytes = kLogCapacity * decoder::kLogRecordSize;
  static constexpr uint64_t kAreaBytes =
      (kAreaLogBytes + decoder::kThreadAreaAboveBase + kPageSize - 1) / kPageSize * kPageSize;
  // Logs a thread has besides the one it writes, where a CPU is spare:
  // two, so that the program fills a log while the one before it is
  // still encoded (with one, btstub's thread, on the program's CPU,
  // encoded what the worker had not reached while the program waited:
  // docs/performance.md "A third log").
  static constexpr std::size_t kSpareAreas = 2;
  // With many threads their logs (three a thread, each resident as far as
  // it was ever written, and kept for the next thread when one ends)
  // share kLogBudgetBytes, down to kMinLogRecords a log: up to four
  // threads' areas get kLogCapacity, sixteen and more the 64 Ki records
  // every thread had before (200 busy threads: 1.2 GiB, not 4.8 GiB). Set
  // at each reset of the cursor by the areas mapped then (mapped_areas),
  // once the thread has filled a log of kMinLogRecords
  // (Thread::filled_log).
  static constexpr uint64_t kLogBudgetBytes = uint64_t{96} << 20;
  static constexpr uint64_t kMinLogRecords = 64 * 1024;
  static constexpr uint64_t log_records_for(std::size_t areas) {
    const uint64_t share =
        kLogBudgetBytes / ((1 + kSpareAreas) * decoder::kLogRecordSize * std::max<std::size_t>(areas, 1));
    return std::clamp(share, kMinLogRecords, kLogCapacity);
  }
  // Enough code for the longest block the translator makes
  // (kMaxBlockInstructions instructions of at most 15 bytes).
  static constexpr std::size_t kBlockBytes = decoder::kMaxBlockInstructions * 15 + 16;

  struct Stats {
    uint64_t entries = 0;        // threads put into the cache (from the ptrace tracer)
    uint64_t translations = 0;   // blocks translated
    uint64_t untranslatable = 0; // translations refused (the ptrace tracer ran that code)
    uint64_t direct_exits = 0;
    uint64_t indirect_exits = 0;
    uint64_t full_exits = 0;
    uint64_t exits_to_int3s = 0; // exits whose target the ptrace tracer ran (refused)
    uint64_t links = 0;          // direct exits patched to jump straight on
    uint64_t branches = 0;       // drained from logs
    uint64_t lost_logs = 0;      // logs that could not be read (each a gap in the trace)
    uint64_t flushes = 0;        // all translations dropped
    uint64_t repairs = 0;        // stops inside the instrumentation
    uint64_t held = 0;           // threads moved out at another thread's stop
    uint64_t ahead = 0;          // of the translations, made ahead of a visit
    uint64_t ahead_links = 0;    // exits linked as those were written
    uint64_t ahead_entries = 0;  // return sites entered in indirect tables with them
    uint64_t slot_entries = 0;   // targets read from jmp/call slots entered so
  };
  const Stats& stats() const { return stats_; }

  // ---- TraceHook ----
  bool traces(pid_t tid) const override { return ptrace_->traces(tid); }
  StepKind before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) override;
  TraceVerdict on_stop(TracedThreadControl& control, const TracedStop& stop) override;
  void on_held(TracedThreadControl& control, pid_t tid) override;
  void on_thread_created(pid_t tid, pid_t parent) override;
  void on_thread_exited(pid_t tid) override;
  void on_exec(pid_t tid) override;
  bool pass_trace_breakpoint(TracedThreadControl& control, pid_t tid) override {
    return ptrace_->pass_trace_breakpoint(control, tid);
  }
  bool uses_debug_register() const override { return ptrace_->uses_debug_register(); }
  bool uses_breakpoints() const override { return ptrace_->uses_breakpoints(); }
  bool holds_exit() const override { return ptrace_->holds_exit(); }

  // ---- TraceBackend: the ptrace tracer's traces ----
  std::string_view name() const override { return ptrace_->name(); }
  void set_config(const TraceConfig& config) override { ptrace_->set_config(config); }
  TraceConfig config() const override { return ptrace_->config(); }
  Expected<void> enable(pid_t tid) override { return ptrace_->enable(tid); }
  Expected<void> disable(pid_t tid) override { return ptrace_->disable(tid); }
  bool enabled(pid_t tid) const override { return ptrace_->enabled(tid); }
  Expected<void> enable_all() override { return ptrace_->enable_all(); }
  void disable_all() override { ptrace_->disable_all(); }
  bool all_enabled() const override { return ptrace_->all_enabled(); }
  const decoder::BlockTrace* trace(pid_t tid) const override { return ptrace_->trace(tid); }
  void settle_traces() override { ptrace_->settle_traces(); }
  Expected<TraceConfig> thread_config(pid_t tid) const override { return ptrace_->thread_config(tid); }
  bool stopped_full(pid_t tid) const override { return ptrace_->stopped_full(tid); }
  std::string problem() const override { return ptrace_->problem(); }
  std::string activity() const override;
  Checkpoints* checkpoints() const override { return ptrace_->checkpoints(); }
  const MapChanges* map_changes() const override { return ptrace_->map_changes(); }
  void client_wrote(uint64_t begin, uint64_t end) override;
  void client_wrote_registers(pid_t tid, uint64_t pc_before, const decoder::StackSnapshot& stack_before) override {
    ptrace_->client_wrote_registers(tid, pc_before, stack_before);
  }
  Expected<void> set_bound(uint64_t buffer_bytes) override { return ptrace_->set_bound(buffer_bytes); }

 private:
  // A per-thread area as mapped: log, slots and indirect-target table.
  struct Area {
    uint64_t base = 0;  // its gs base (0: none)
    // btstub's view of it when it is shared (read and written in place);
    // null: the program's alone, read and written through the process
    // layer. Shared with the trace while it encodes from the log there.
    std::shared_ptr<process::SharedMapping> shared;
    // The lowest address from which up to the table's end the program's
    // page tables hold its pages (populate_area); 0: none yet.
    uint64_t populated_from = 0;
  };
  struct Thread {
    bool in_cache = false;
    // The area it logs into: its gs base in the cache (base 0: no area
    // mapped yet).
    Area area;
    uint64_t log_capacity = 0;   // records its log holds (<= kLogCapacity)
    // Records the log takes since its last reset: its capacity, or less
    // where the trace has less room left under --trace-full=stop (the next
    // branch then exits as the log's full, and the trace stops there, as
    // under the ptrace tracer). The cursor starts at -log_fill records.
    uint64_t log_fill = 0;
    // It has filled a log (a log-full exit): only then does its log take
    // more than kMinLogRecords, the areas mapped then sharing
    // kLogBudgetBytes. A thread's first log is the small one, so that
    // threads made one after another (each seeing fewer areas) do not each
    // fill a large one.
    bool filled_log = false;
    uint64_t program_gs = 0;     // the program's gs base, put back outside
    std::vector<int> deferred;   // signals that came inside the instrumentation
    std::set<uint64_t> table_entries;  // offsets of the indirect-table entries filled
    int repair_steps = 0;        // steps taken towards a clean point
    uint64_t logged = 0;         // branches its translated code logged
    // Up to kSpareAreas more areas, their tables kept the same as the
    // first's, when all are shared and a CPU is spare: a log-full exit
    // lends the log filled, to be encoded on the spare CPU straight from
    // there (SoftwareTracer::store_lent_branches with a lender), and
    // switches the thread to the first of these (its gs base), the one
    // lent longest ago, once the trace has it back; the log filled goes
    // last. None: the one area serves alone.
    std::vector<Area> others;
    uint64_t switches = 0;       // exits that switched its area
  };
  // The per-thread area's slots, as read at a stop.
  struct Slots {
    uint64_t saved_rax = 0;
    uint64_t saved_rcx = 0;
    int64_t cursor = 0;
    uint64_t exit_target = 0;
  };

  explicit TranslatingTracer(std::unique_ptr<SoftwareTracer> ptrace) : ptrace_(std::move(ptrace)) {
    ptrace_->observe_system_calls(
        [this](const SystemCall& call, const CodeWrite& write) { note_system_call(call, write); });
  }

  // The hook's work; before_resume and on_stop tell the ptrace tracer
  // which threads run code around them (SoftwareTracer::note_resumed).
  StepKind plan_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal);
  // The signal that stopped `tid` in the cache names the original address
  // of its fault, not the cache's (si_addr).
  void original_fault_address(TracedThreadControl& control, pid_t tid, int signal);
  TraceVerdict judge_stop(TracedThreadControl& control, const TracedStop& stop);

  // translating_tracer_entry.cc: into the cache.
  bool may_enter(TracedThreadControl& control, pid_t tid, const protocol::RegisterFile& regs) const;
  // Lends the stopped thread (out of the cache, at `pc`) and puts it into
  // the translation of `pc`; false (the thread untouched and not lent)
  // where that cannot be done.
  bool enter(TracedThreadControl& control, pid_t tid, uint64_t pc);
  // The translation of `pc`, made (and its regions mapped, by `tid`) if
  // need be; nullptr where the ptrace tracer must run that code.
  const decoder::Translation* translation_for(TracedThreadControl& control, pid_t tid, uint64_t pc);
  // The translation of `pc` as translation_for, and when it is new, the
  // blocks ahead of it too (translate_ahead).
  const decoder::Translation* translation_and_ahead(TracedThreadControl& control, pid_t tid, uint64_t pc);
  // How blocks are translated: ending before system calls and breakpoints.
  decoder::TranslateOptions translate_options() const;
  // translating_tracer_ahead.cc: translates the blocks that `from` (a
  // translation nobody has run yet) leads to by direct transfers, and
  // theirs, with every exit between them linked, in a few writes. When a
  // write fails, none is kept and flush_pending_ is set: nobody may enter
  // `from` then.
  // The return sites of calls among them go into the indirect table of
  // `th` (when given, with its area mapped).
  void translate_ahead(TracedThreadControl& control, Thread* th, const decoder::Translation& from);
  // The thread's area (log, slots, table), mapped or reused; false when it
  // cannot be had or the thread ended meanwhile (the mmap waits for it).
  bool ensure_area(TracedThreadControl& control, pid_t tid);
  // Drops translations made under other breakpoints or other code. False
  // when they must be dropped but another thread is in the cache (the drop
  // waits for it to come out; nobody enters meanwhile).
  bool refresh_code(TracedThreadControl& control, pid_t tid);
  // Each system call the ptrace tracer stepped (it steps them all), judged
  // once there: whether it may have changed translated code
  // (stub/tracing/code_writes.h; the next entry then flushes) or the maps
  // (the next entry re-reads them).
  void note_system_call(const SystemCall& call, const CodeWrite& write);
  // Whether a thread could have changed the maps unseen: some thread runs
  // untraced, its system calls not stepped.
  bool maps_may_change_unseen() const { return !ptrace_->every_thread_traced(); }

  // translating_tracer_exits.cc: stops of a thread in the cache.
  TraceVerdict on_cache_stop(TracedThreadControl& control, Thread& th, const TracedStop& stop);
  TraceVerdict at_exit(TracedThreadControl& control, Thread& th, pid_t tid, const TranslationCache::Trap& trap,
                       protocol::RegisterFile& regs);
  // The thread ran the int3 of `trap`: the branch into it is taken. Its log
  // drained (and the record a full log owes stored); where it stands now,
  // and whether the trace took everything. nullopt when its slots cannot be
  // read.
  struct ExitTaken {
    uint64_t target = 0;
    bool room = true;
    // The trace had no room for the log-full exit's own branch (under
    // --trace-full=stop): the thread goes back before it, to its source
    // with the rsp (and a loop's rcx) it had there, as the ptrace tracer
    // stops before a branch that does not fit. Past it, the thread would
    // stand where its history does not lead. Also a call's log-full exit
    // (BlockExit::retry), which comes before the call did anything: the
    // thread runs it again, in the cache if it stays there.
    struct Before {
      uint64_t from = 0;
      uint64_t rsp = 0;
      std::optional<uint64_t> rcx;
    };
    std::optional<Before> before;
  };
  std::optional<ExitTaken> take_exit(TracedThreadControl& control, Thread& th, pid_t tid,
                                     const TranslationCache::Trap& trap, const protocol::RegisterFile& regs);
  // Goes on at `offset` of `t`, which stands for `original` there (a
  // checkpoint, if one is due, taken with the thread at `original`).
  TraceVerdict resume_in_cache(TracedThreadControl& control, Thread& th, pid_t tid, uint64_t original,
                               const decoder::Translation& t, uint32_t offset);
  // Moves the thread out of the cache to `original` (registers as they
  // are otherwise) and gives it back to the ptrace tracer.
  TraceVerdict leave(TracedThreadControl& control, Thread& th, pid_t tid, uint64_t original,
                     const TracedStop* stop, const ExitTaken::Before* before = nullptr);
  // Puts the thread (in the cache) at `original`, out of it, its gs base
  // the program's, the signals held back sent again. False when its
  // registers cannot be written (gone).
  bool step_out(TracedThreadControl& control, Thread& th, pid_t tid, uint64_t original,
                const ExitTaken::Before* before = nullptr);
  bool read_slots(TracedThreadControl& control, const Thread& th, Slots& out);
  // Hands the log's records to the ptrace tracer and empties the log.
  // False when the trace refused more (full under the stop policy).
  // `resume`: the original pc where the thread goes on. A log that cannot
  // be read (a bad cursor, a failed read: the program wrote over btstub's
  // area) is lost, and stored as a gap to `resume` (*lost set).
  // `switch_log`: at an exit, where the thread may go on in its other
  // area (Thread::other) while this log is encoded.
  bool drain(TracedThreadControl& control, pid_t tid, Thread& th, const Slots& slots, uint64_t resume,
             bool* lost = nullptr, bool switch_log = false);
  bool lose_log(TracedThreadControl& control, pid_t tid, Thread& th, uint64_t resume, bool* lost, const char* why);
  // Stores a run of the thread's log in its trace (the ptrace tracer's);
  // false when the trace took fewer (full under the stop policy).
  // With a `lender`, the trace may read the run there until
  // SoftwareTracer::return_lent_memory.
  bool store_run(pid_t tid, Thread& th, std::span<const decoder::StackedBranch> run,
                 const std::shared_ptr<const void>& lender = nullptr);
  // Threads' areas mapped in the program: the live threads' and those
  // kept for the next (free_areas_).
  std::size_t mapped_areas() const;
  bool reset_cursor(TracedThreadControl& control, pid_t tid, Thread& th);
  // Backs the part of the thread's area its log takes now, and the slots
  // and table above its base, with pages in the program's page tables, by
  // one madvise the thread makes (process layer: populate_program_memory),
  // once a thread has filled a log (an idle thread's areas stay unbacked),
  // where the area is shared (not under seccomp: map_area).
  // In a VM each page's first touch was a page fault of ~15-20 us: a busy
  // thread's three areas took ~6,900 of them (docs/performance.md). Speed
  // only: a refusal ends the tries. False when the thread ended meanwhile
  // (the madvise's waits saw it go): its Thread is gone.
  bool populate_area(TracedThreadControl& control, pid_t tid);
  // The cursor of an empty log of the thread's fill (records count up to 0).
  static int64_t empty_cursor(const Thread& th) {
    return -static_cast<int64_t>(th.log_fill * decoder::kLogRecordSize);
  }
  // Writes into a thread's area (its slots or table): in place where it is
  // shared, else through the process layer.
  static bool write_area(TracedThreadControl& control, const process::SharedMapping* shared, uint64_t address,
                         const std::vector<uint8_t>& bytes);
  // Writes an indirect-table entry at `offset` into a thread's area and
  // its others. False when any write failed.
  static bool write_table(TracedThreadControl& control, const Area& area, const std::vector<Area>& others,
                          uint64_t offset, const std::vector<uint8_t>& bytes);
  // Maps a new area for `tid`, its table empty; nullopt when it cannot.
  // `shared_only`: none unless btstub shares it.
  std::optional<Area> map_area(TracedThreadControl& control, pid_t tid, bool shared_only);
  // translating_tracer_held.cc: a thread in the cache stopped because
  // another thread stopped (all-stop, or a non-stop vCont;t). Moves it out
  // (drained, stepped out of the instrumentation if need be) and leaves it
  // stopped there, lent, for the next resume to put back.
  void bring_out(TracedThreadControl& control, pid_t tid, Thread& th);
  // Whether a thread other than `tid` is in the cache (it may be running
  // code there, which must then not be rewritten under it).
  bool others_in_cache(pid_t tid) const;
  // Links exits whose patch waited for the cache to be this thread's alone.
  void apply_links(TracedThreadControl& control);
  // Lets indirect transfers to `original` go straight to `t` from now on.
  void enter_indirect(TracedThreadControl& control, Thread& th, uint64_t original, const decoder::Translation& t);
  // Drops every translation, and the table entries that led to them.
  void flush(TracedThreadControl& control);
  Thread* thread(pid_t tid);
  std::size_t live_threads() const { return live_.size(); }

  std::unique_ptr<SoftwareTracer> ptrace_;
  TranslationCache cache_;
  std::map<pid_t, Thread> threads_;
  std::set<pid_t> live_;
  // Blocks whose translation failed (the ptrace tracer runs them), until
  // the next flush.
  // the next flush, each with why (the reason without the address).
  std::map<uint64_t, std::string> refused_;
  std::string last_refusal_;  // why the last of them was refused
  // For monitor record status, per reason since recording started: the
  // blocks refused and the exits from the cache to one of them.
  struct Refusals {
    uint64_t blocks = 0;
    uint64_t exits = 0;
    uint64_t example = 0;  // the first block refused so
  };
  std::map<std::string, Refusals> refusals_;
  // What the translations were made under.
  std::vector<uint64_t> breakpoints_;
  // How they write their logs: plain stores with a prefetchw ahead where
  // the CPU has prefetchw, movnti elsewhere (decoder/block_translator.h
  // "Log stores").
  const decoder::LogStores log_stores_ = log_stores_for_this_cpu();
  static decoder::LogStores log_stores_for_this_cpu();
  std::optional<TranslatableCode> code_;
  bool code_stale_ = true;  // re-read the maps before the next entry
  bool code_written_ = false;  // a system call may have changed translated code
  // Translations to drop once no thread is in the cache (refresh_code).
  bool flush_pending_ = false;
  bool populate_refused_ = false;  // populate_area failed once: not tried again
  // Direct exits to link (patch address -> rel32) once no other thread
  // runs in the cache: a rel32 rewritten under a running jump is unsafe.
  std::map<uint64_t, std::vector<uint8_t>> pending_links_;
  // Areas of threads that ended, for new threads (their table entries to
  // clear first): a program starting threads over and over maps no more
  // areas than it ever had threads at once.
  struct FreeArea {
    Area area;
    std::vector<Area> others;
    std::set<uint64_t> table_entries;
  };
  std::vector<FreeArea> free_areas_;
  Stats stats_;
  // A piece of a log being drained (translating_tracer_exits.cc).
  std::vector<decoder::StackedBranch> drained_;
  // Faults in the heap the next drains' chunks take, while the program runs.
  HeapPrefaulter heap_prefaulter_;
};

static_assert(TranslatingTracer::log_records_for(1) == TranslatingTracer::kLogCapacity &&
              TranslatingTracer::log_records_for(4) == TranslatingTracer::kLogCapacity &&
              TranslatingTracer::log_records_for(8) == 128 * 1024 &&
              TranslatingTracer::log_records_for(16) == TranslatingTracer::kMinLogRecords);

}  // namespace stub::tracing
