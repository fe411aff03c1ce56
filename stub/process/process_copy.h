#pragma once
// A copy of the recorded program, made by the program itself: an injected
// clone(CLONE_PARENT) with no exit signal, so the copy is btstub's child and
// tracee, not the program's (the program cannot wait for it and gets no
// SIGCHLD when it dies), and shares the program's memory copy-on-write.
//
// Copies stand still (checkpoints, stub/tracing/checkpoints.h) or run
// forward along the recorded path to one instruction of the history
// (run_to), where the replay engine reads their registers and memory. They
// run under PTRACE_SYSEMU: a system call stops the copy before it runs, so
// a copy never reads or writes a file, pipe or socket it shares with the
// program. The copy is killed and reaped with this object.
#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "decoder/counting_patch.h"
#include "protocol/expected.h"
#include "protocol/register_file.h"
#include "stub/process/debug_registers.h"
#include "stub/process/repeated_call.h"
#include "stub/process/shared_memory_digest.h"

namespace stub::process {

// Bytes of a program by address, ascending: what lies under int3s.
using ProgramBytes = std::vector<std::pair<uint64_t, uint8_t>>;

using btstub::Expected;

class ProcessCopy {
 public:
  // Takes a stopped tracee made by ptrace_detail::inject_clone whose memory
  // holds none of our int3s.
  static std::unique_ptr<ProcessCopy> adopt(pid_t pid);
  ~ProcessCopy();
  ProcessCopy(const ProcessCopy&) = delete;
  ProcessCopy& operator=(const ProcessCopy&) = delete;

  pid_t pid() const { return pid_; }

  // The program's bytes under the int3s the copy was made with, put back
  // at its first use (fork, run, read) rather than at once: a checkpoint
  // never used then costs neither the writes nor code pages of its own.
  // Shared: checkpoints taken under the same int3s hold one list.
  void owe_bytes(std::shared_ptr<const ProgramBytes> originals) { owed_ = std::move(originals); }
  // Its time stamp counter reads are made to fault (PR_SET_TSC) before it
  // first runs or is forked (copies forked from it inherit that), not when
  // it is taken: one injected system call less for each checkpoint never
  // used. Nothing the copy does before it runs can read the counter.
  void owe_tsc_fault() { tsc_fault_owed_ = true; }

  // Another copy of this one, standing at the same instruction; this one
  // stays where it was.
  Expected<std::unique_ptr<ProcessCopy>> fork();

  // A file the copy maps privately that changed since its checkpoint was
  // taken (copies forked from it count from that checkpoint;
  // mapped_file_changed_after), or nullopt. The pages of such a mapping the
  // program never wrote are the file's page cache: the copy would read,
  // and a re-run compute from, what the file holds now.
  std::optional<std::string> file_changed_since_taken() const;
  // The files the program mapped shared and writable when the checkpoint
  // was taken (shared_writable_files): it may have changed them since
  // without a trace, so a private mapping of one counts as changed.
  void note_shared_files(std::set<uint64_t> inodes) {
    shared_files_ = std::make_shared<const std::set<uint64_t>>(std::move(inodes));
  }
  // The shared mappings the checkpoint holds private snapshots of, and the
  // digest of the program's bytes there when it was taken
  // (shared_memory_digest.h). Copies forked from it hold the same.
  // One object (a memfd, a SysV segment, a file) the program mapped
  // shared at more than one place: the copy maps each of those places from
  // one object of its own (copy_shared_memory.h).
  struct SharedViews {
    struct View {
      uint64_t begin = 0;  // [begin, end) in the copy, mapped with `prot`
      uint64_t end = 0;
      uint64_t at = 0;  // where in the object
      uint64_t prot = 0;
    };
    uint64_t size = 0;
    std::vector<View> views;
  };
  struct SharedSnapshot {
    SharedRanges ranges;
    uint64_t digest = 0;
    std::vector<SharedViews> aliased;
  };
  void note_shared_snapshot(SharedSnapshot snapshot) {
    shared_snapshot_ = std::make_shared<const SharedSnapshot>(std::move(snapshot));
  }
  // Null or empty ranges: the program shared no memory then.
  const SharedSnapshot* shared_snapshot() const { return shared_snapshot_.get(); }
  // The digest of the copy's bytes in those ranges now.
  uint64_t shared_digest();

  // Whether the stretch a run goes through may jump into [low, high)
  // (decoder::enters_inside); where the copy stands is its own to check.
  using EntryCheck = std::function<bool(uint64_t low, uint64_t high)>;
  // Below this many visits, stopping at each costs less than the counting
  // page's two injected system calls.
  static constexpr uint64_t kCountingMinHits = 8;

  // The system calls the copy makes again on its next runs, in the order
  // it meets them (repeated_call.h): the recorded ones between where it
  // stands and where it is sent. Any other system call, or one of these
  // with other arguments or another result, makes the copy unusable. A
  // fresh copy (and a fork) expects none.
  void expect_calls(std::vector<RepeatedCall> calls) { expected_calls_.assign(calls.begin(), calls.end()); }
  // Calls it was given and has not met: at the end of a run, it went
  // another way than the recording.
  bool expects_calls() const { return !expected_calls_.empty(); }

  // Runs until the instruction at `pc` is about to execute for the
  // `hits`-th time (the instruction the copy stands at counts as the first
  // when it is at `pc`). An error, with the copy unusable, when it meets a
  // system call, a signal or a fault first. With `enters` given and enough
  // visits, the copy counts them itself and stops once, or once more per
  // armed watch that fires (decoder/counting_patch.h: a page of its own for
  // the count, mapped and unmapped by injected system calls, and a jmp over
  // the bytes at `pc` that `enters` says the run cannot land inside of).
  // Otherwise it stops once per visit of `pc` (an execute breakpoint in a
  // debug register the armed watches leave free), twice when the watches
  // hold all four (an int3).
  Expected<void> run_to(uint64_t pc, uint64_t hits, const EntryCheck& enters = {});

  // Whether the counting jmp fits at `pc`: the bytes there can be moved,
  // a free page lies within reach and `enters` lets the jmp cover them. A
  // prediction: run_to still needs kCountingMinHits visits, and the
  // kernel may refuse to map the page there (run_to then stops at each).
  Expected<bool> counts_at(uint64_t pc, const EntryCheck& enters);

  // Arms the copy's debug registers with `watches` (execute slots left
  // out): later runs see them fire. A fresh copy has none armed.
  Expected<void> arm(const DebugRegisterState& watches);
  // run_to, counting the armed watches that fire on the way (at native
  // speed: what tells whether a stretch of the past touched them at all).
  Expected<uint64_t> run_to_counting(uint64_t pc, uint64_t hits, const EntryCheck& enters = {});
  // An instruction that fired an armed watch: its pc, and which run of that
  // pc it was (1: the first since the copy's start point, which counts).
  struct WatchHit {
    uint64_t pc = 0;
    uint64_t visit = 0;
    DebugHit hit;
  };
  // The same run one instruction at a time, telling each watch hit.
  Expected<std::vector<WatchHit>> step_to(uint64_t pc, uint64_t hits);

  Expected<protocol::RegisterFile> registers();
  // Writes into the copy: only to give it back the program's own bytes
  // (the int3s it inherited).
  bool write_memory(uint64_t addr, const std::vector<uint8_t>& bytes);
  // The readable prefix of [addr, addr+len); a MemoryFault when none is.
  Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len);

  // How many times it has stopped for btstub (each a round trip through
  // the kernel, the main cost of a run).
  uint64_t stops() const { return stops_; }

  // Its proportional share of memory (Pss: each page divided by the
  // processes sharing it), in bytes, from /proc/PID/smaps_rollup; 0 when
  // unknown.
  uint64_t proportional_bytes() const;

 private:
  explicit ProcessCopy(pid_t pid);
  Expected<uint64_t> pc();
  Expected<void> set_pc(uint64_t pc);
  // One ptrace resume (PTRACE_SYSEMU or its single-step form) and the stop
  // it ends in: the signal, or an error for a system call, exit or fault.
  struct Stop {
    std::vector<DebugHit> watch_hits;  // armed watches that fired
    bool at_breakpoint = false;        // before the breakpoint's instruction
  };
  Expected<Stop> resume_and_wait(bool single_step);
  // At the copy's stop at the entry of a system call (`regs`): makes the
  // next expected call for it, or says why it cannot.
  Expected<void> make_expected_call(const ::user_regs_struct& regs);
  // The copy stands after `call` as the program did: its result in rax.
  Expected<void> give_result(const ::user_regs_struct& regs, const RepeatedCall& call);
  bool at_repeated_string_instruction(uint64_t pc);
  // Puts the owed bytes back (owe_bytes), one write per stretch of a page;
  // the copy is unusable if that fails.
  Expected<void> pay_owed_bytes();
  // Before the copy runs or is forked: its owed time stamp counter fault
  // (owe_tsc_fault), then its owed bytes.
  Expected<void> ready_to_run();

  // The counting patch for `hits` visits of `target` with a free page near
  // it; nullopt where none can be made.
  Expected<std::optional<decoder::CountingPatch>> counting_patch(uint64_t target, uint64_t hits,
                                                                 const EntryCheck& enters);
  // run_to_counting counted in the copy (ptrace_copy_counting.cc): the
  // watch hits on the way; nullopt when it cannot be done here and nothing
  // changed.
  Expected<std::optional<uint64_t>> run_by_counting(uint64_t target, uint64_t hits, const EntryCheck& enters);
  // The copy's page for the count at `page`, by an injected mmap; false
  // when the kernel would not map it there (nothing changed).
  Expected<bool> map_counting_page(uint64_t page);
  Expected<void> unmap_counting_page(uint64_t page);

  // run_to's two other ways (ptrace_copy_run.cc): an execute breakpoint in a
  // free debug register, or an int3 when the watches hold all four.
  Expected<uint64_t> run_by_breakpoint(uint64_t target, uint64_t hits, bool repeats);
  Expected<uint64_t> run_by_int3(uint64_t target, uint64_t hits, bool repeats, uint8_t original);
  // Runs the instruction at `target` the copy stands at (all iterations of
  // a repeated string instruction) by single steps; counts watches.
  Expected<uint64_t> step_over(uint64_t target, bool repeats);
  // step_over with the execute breakpoint off.
  Expected<uint64_t> step_past(uint64_t target, bool repeats);
  // Puts the execute breakpoint at `pc` into a debug register the watches
  // leave free; false when there is none.
  Expected<bool> set_breakpoint(uint64_t pc);
  Expected<void> enable_breakpoint(bool on);
  Expected<void> clear_breakpoint();
  Expected<void> clear_resume_flag();

  pid_t pid_ = 0;
  bool usable_ = true;
  timespec taken_{};  // CLOCK_REALTIME when its checkpoint was taken
  std::shared_ptr<const std::set<uint64_t>> shared_files_;  // note_shared_files
  std::shared_ptr<const SharedSnapshot> shared_snapshot_;   // note_shared_snapshot
  DebugRegisterState armed_;  // the watches alone
  // The slot and DR7 of run_to's execute breakpoint while it runs.
  std::optional<int> breakpoint_slot_;
  uint64_t breakpoint_dr7_ = 0;
  bool breakpoint_on_ = false;  // in DR7 now (step_past turns it off)
  uint64_t stops_ = 0;
  int mem_fd_ = -1;
  std::shared_ptr<const ProgramBytes> owed_;
  bool tsc_fault_owed_ = false;
  std::deque<RepeatedCall> expected_calls_;
};

}  // namespace stub::process
