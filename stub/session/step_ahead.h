#pragma once
// Runs a stopped program's next single step while the client is still busy
// with the stop reply of the previous one, and answers the client's next
// step with it; any other request first puts the program back.
//
// Why: gdb spends ~100 µs of its own on each `stepi` here, and btstub's
// step (a ptrace stop, two context switches) used to follow it in series.
// Clients step in runs (`stepi N`, `next` over a line, a front end's step
// button held down), with at most memory reads and breakpoint insertions
// in between. Run ahead, the step overlaps the client's work.
//
// Exactness: only a step that can be taken back exactly is run ahead. The
// decoder vouches for the instruction (decoder::InstructionDecoder::
// footprint: no system call, no state outside the register file, no fault
// once the memory it touches is readable), and the bytes it may write are
// saved first; the mappings must let the program read them (and write
// the written ones: /proc/PID/mem would read a PROT_NONE page); a step
// that writes to a shared mapping (another process could see it) is not
// run ahead, and nothing is where the program has a shadow stack (a call
// or ret moves its pointer too). Undoing restores the register file, those
// bytes and the thread's siginfo.
//
// Signals: while the step runs the process passes none by itself
// (QPassSignals), so none can enter a handler. A signal that was pending,
// or comes meanwhile, stops the thread before an instruction runs; the
// process keeps that stop for the next resume (Process::keep_pending),
// whatever the client asks then, as if the step ahead had not been tried.
// A fault raised by the instruction itself (pc unchanged) needs no undo:
// the next resume discards the signal, and the instruction runs, and
// faults, again; a fault the client passes is left to the client's step
// altogether, which meets it and reports it (the client steps over the
// handler). No step is run ahead from a step into a signal handler: that
// stop drops a signal the next resume gives, and an undone step would not.
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "decoder/instruction_decoder.h"
#include "protocol/register_file.h"
#include "stub/process/process.h"

namespace stub::session {

using process::MemoryMapping;
using process::Process;
using process::ProcessEvent;

class StepAhead {
 public:
  // Runs `tid`'s next instruction now if it can be undone (see above).
  // The caller vouches that nothing else can see the step: `tid` is the
  // program's only thread, not traced, not replaying, and no Z1-Z4 point
  // is inserted.
  // `passed`: the signals the process delivers by itself (QPassSignals),
  // set again once the step has run.
  void run(Process& process, pid_t tid, const std::set<int>& passed);
  bool active() const { return taken_.has_value(); }
  pid_t tid() const { return taken_ ? taken_->tid : 0; }

  // The stop of the step run ahead, handed out once when the client
  // resumes `tid` with exactly that step; the program is then really there.
  // nullopt (and nothing to undo) when the thread is gone meanwhile (a
  // SIGKILL): the real resume then finds out.
  std::optional<ProcessEvent> take(Process& process, pid_t tid);
  // Puts the program back where the client saw it stop.
  void undo(Process& process);
  // Bytes read from memory as the client must see them: what the step may
  // have written reads as before it.
  void show_before(uint64_t addr, std::vector<uint8_t>& bytes) const;
  // The program is gone: nothing to put back.
  void forget() { taken_.reset(); }
  // The program ran (or is another one): its mappings, or whether it uses
  // a shadow stack, may have changed.
  void forget_program_state() {
    mappings_.clear();
    shadow_stack_.reset();
  }

 private:
  struct SavedBytes {
    uint64_t address = 0;
    std::vector<uint8_t> bytes;
  };
  struct Taken {
    pid_t tid = 0;
    protocol::RegisterFile before;
    std::vector<SavedBytes> saved;
    std::optional<std::vector<uint8_t>> siginfo;  // before the step
    ProcessEvent event;
    bool faulted = false;  // the instruction raised a signal and did not run
  };

  std::optional<std::vector<SavedBytes>> save_footprint(Process& process, const protocol::RegisterFile& regs);
  const MemoryMapping* mapping_of(Process& process, uint64_t addr, uint64_t len);
  void settle(Process& process, Taken taken, const std::set<int>& passed);

  std::optional<Taken> taken_;
  // A client that reads registers after every step (a front end's register
  // view) makes each step run ahead cost an undo as well: after two undone
  // in a row, the next kPauseAfterMisses chances are let go.
  static constexpr int kPauseAfterMisses = 8;
  int undone_in_a_row_ = 0;
  int chances_to_skip_ = 0;
  std::optional<decoder::InstructionDecoder> decoder_;  // opened on first use
  // Cached between steps: a step run ahead makes no system call, so it
  // cannot map or unmap anything, nor turn a shadow stack on.
  std::vector<MemoryMapping> mappings_;
  std::optional<bool> shadow_stack_;
};

}  // namespace stub::session
