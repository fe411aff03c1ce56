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
// saved first; a step that writes to a shared mapping (another process
// could see it) is not run ahead, and nothing is where the program has a
// shadow stack (a call or ret moves its pointer too). Undoing restores the register file and
// those bytes. Asynchronous signals are blocked while the step runs, so a
// signal cannot slip in and run a handler; one that cannot be blocked (a
// SIGSTOP, a SIGKILL) or is sent as a fault signal is kept by the process
// for the next resume (Process::keep_pending), as if it came while the
// program was stopped. A fault raised by the instruction itself (pc
// unchanged) needs no undo: the next resume discards the signal, and the
// instruction runs, and faults, again.
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/instruction_decoder.h"
#include "protocol/register_file.h"
#include "stub/process.h"

namespace stub {

class StepAhead {
 public:
  // Runs `tid`'s next instruction now if it can be undone (see above).
  // The caller vouches that nothing else can see the step: `tid` is the
  // program's only thread, not traced, not replaying, and no Z1-Z4 point
  // is inserted.
  void run(Process& process, pid_t tid);
  bool active() const { return taken_.has_value(); }
  pid_t tid() const { return taken_ ? taken_->tid : 0; }

  // The stop of the step run ahead, handed out once when the client
  // resumes `tid` with exactly that step; the program is then really there.
  std::optional<ProcessEvent> take(pid_t tid);
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
    ProcessEvent event;
    bool faulted = false;  // the instruction raised a signal and did not run
  };

  std::optional<std::vector<SavedBytes>> save_footprint(Process& process, const protocol::RegisterFile& regs);
  bool privately_writable(Process& process, uint64_t addr, uint64_t len);
  void settle(Process& process, pid_t tid, protocol::RegisterFile before, std::vector<SavedBytes> saved,
              ProcessEvent event);

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

}  // namespace stub
