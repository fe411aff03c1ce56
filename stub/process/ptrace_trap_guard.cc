// The program's SIGTRAP handler kept through the traps btstub causes.
//
// A step, an int3 or a debug register hit reaches the kernel as a forced
// SIGTRAP, and a forced signal the thread blocks (or ignores) is unblocked
// and its disposition reset to SIG_DFL (force_sig_info_to_task). Inside a
// SIGTRAP handler (without SA_NODEFER SIGTRAP is blocked there), or where
// the program blocks it, the tracer's first trap would so take the
// program's handler away, and the next SIGTRAP the program gets would end
// it. gdbserver does the same where the user steps there; under
// `--record` the tracers trap all the time.
//
// So while the program has a SIGTRAP handler, the thread's mask is read at
// each resume (PTRACE_GETSIGMASK, cheap). Where SIGTRAP was blocked at the
// last resume and is not now, or the last stop came after a system call
// that sets the mask or the last resume delivered a signal (its handler's
// mask), the process's dispositions are read from /proc; a
// handler gone to SIG_DFL was reset by a trap of ours (the program's own
// rt_sigaction is noted at its stop, note_trap_calls), and since the kernel
// resets only a blocked one there, the handler is set again (an injected
// rt_sigaction, made while SIGTRAP is unblocked: its own step trap resets
// nothing) and SIGTRAP blocked again.
//
// An ignored SIGTRAP is reset by every trap of ours, blocked or not: rather
// than set again at each resume, it is kept ignored here. A SIGTRAP sent
// to the program then is dropped at its stop, as the kernel would have
// dropped it, and rt_sigaction's old action says SIG_IGN.
//
// A SIGTRAP sent while the program blocks it stays pending only until our
// next trap: the forced one merges with it and the kernel, unblocking
// SIGTRAP, delivers it (to the tracer first, then the program).
//
// Not kept: a handler with SA_RESETHAND (the kernel resets it itself), a
// disposition the program set while btstub did not see its system calls
// (not recording, or before attaching), and a mask changed by such a
// call: those are as under gdbserver.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <cstring>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"
#include "stub/process/thread_signal_masks.h"

namespace stub::process {

using namespace ptrace_detail;

namespace {

constexpr uint64_t kTrapBit = uint64_t{1} << (SIGTRAP - 1);
constexpr std::size_t kActionBytes = 4 * sizeof(uint64_t);  // the kernel's struct sigaction
constexpr uint64_t kResetHand = 0x80000000;                  // SA_RESETHAND
constexpr uint64_t kRedZone = 128;

}  // namespace

void PtraceProcess::note_trap_calls(ThreadState& thread, const user_regs_struct& regs) {
  // orig_rax holds the number of a system call the stop came right after
  // (a step over it); an exception's entry (int3, a debug trap) sets -1.
  const long number = static_cast<long>(regs.orig_rax);
  if (number == SYS_rt_sigprocmask || number == SYS_rt_sigreturn) thread.after_mask_call = true;
  if (number != SYS_rt_sigaction || regs.rdi != SIGTRAP || regs.rax != 0) return;
  if (trap_ignored_ && regs.rdx != 0) {
    // The old action it asked for: SIG_IGN, as it set it (the kernel's
    // was reset to SIG_DFL by a trap of ours).
    uint64_t handler = 0;
    const std::vector<uint8_t> old = raw_read(regs.rdx, sizeof handler);
    if (old.size() == sizeof handler) {  // unreadable: left as the kernel wrote it
      std::memcpy(&handler, old.data(), sizeof handler);
      if (handler == reinterpret_cast<uint64_t>(SIG_DFL)) {
        const uint64_t ignore = reinterpret_cast<uint64_t>(SIG_IGN);
        std::vector<uint8_t> bytes(sizeof ignore);
        std::memcpy(bytes.data(), &ignore, sizeof ignore);
        (void)raw_write(regs.rdx, bytes);
      }
    }
  }
  if (regs.rsi == 0) return;  // a question only
  // The action it set, still where it passed it from.
  const std::vector<uint8_t> bytes = raw_read(regs.rsi, kActionBytes);
  if (bytes.size() != kActionBytes) {
    trap_handler_.reset();  // unknown: not kept
    trap_ignored_ = false;
    return;
  }
  std::array<uint64_t, 4> action{};
  std::memcpy(action.data(), bytes.data(), kActionBytes);
  trap_ignored_ = action[0] == reinterpret_cast<uint64_t>(SIG_IGN);
  const bool handler = action[0] != reinterpret_cast<uint64_t>(SIG_DFL) &&
                       action[0] != reinterpret_cast<uint64_t>(SIG_IGN) && (action[1] & kResetHand) == 0;
  if (handler) {
    trap_handler_ = action;
  } else {
    trap_handler_.reset();
  }
  thread.after_mask_call = true;  // its step's trap may have reset it at once
}

void PtraceProcess::keep_trap_handler(pid_t tid, ThreadState& thread, int signal) {
  if (!trap_handler_) {
    thread.mask_at_resume.reset();
    thread.after_mask_call = false;
    return;
  }
  uint64_t mask = 0;
  if (!do_ptrace(PTRACE_GETSIGMASK, tid, sizeof mask, &mask)) {
    thread.mask_at_resume.reset();
    thread.after_mask_call = signal != 0;
    return;
  }
  const bool was_blocked = thread.mask_at_resume && (*thread.mask_at_resume & kTrapBit) != 0;
  const bool suspect = (mask & kTrapBit) == 0 && (was_blocked || thread.after_mask_call);
  // A signal delivered now enters its handler with the handler's mask,
  // which may block SIGTRAP: the next resume checks.
  thread.after_mask_call = signal != 0;
  if (suspect) {
    const std::optional<ThreadSignalMasks> now = read_thread_signal_masks(tid);
    if (now && (now->caught & kTrapBit) == 0 && (now->ignored & kTrapBit) == 0) {
      // Reset by a trap of ours, so blocked then. The action goes below the
      // red zone of the thread's stack for the call, then the bytes there
      // are put back.
      user_regs_struct regs{};
      if (do_ptrace(PTRACE_GETREGS, tid, 0, &regs)) {
        const uint64_t scratch = (regs.rsp - kRedZone - kActionBytes) & ~uint64_t{15};
        const std::vector<uint8_t> saved = raw_read(scratch, kActionBytes);
        std::vector<uint8_t> action(kActionBytes);
        std::memcpy(action.data(), trap_handler_->data(), kActionBytes);
        if (saved.size() == kActionBytes && raw_write(scratch, action)) {
          auto set = inject_in_program(tid, SYS_rt_sigaction, {SIGTRAP, scratch, 0, sizeof(uint64_t)});
          (void)raw_write(scratch, saved);
          if (set) {
            give_back_signals_met(tid, set->signals_met);
            if (set->result == 0) {
              mask |= kTrapBit;
              (void)do_ptrace(PTRACE_SETSIGMASK, tid, sizeof mask, &mask);
            }
          }
        }
      }
    }
  }
  thread.mask_at_resume = mask;
}

}  // namespace stub::process
