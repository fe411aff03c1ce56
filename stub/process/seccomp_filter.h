// What a program's seccomp filters make of a system call, worked out the
// way the kernel runs them (classic BPF over struct seccomp_data), without
// making the call. btstub asks before each system call it makes in the
// program: a filter that would end the program there (SECCOMP_RET_KILL_*)
// or hand the call to a supervisor (SECCOMP_RET_USER_NOTIF) must not see
// it. No OS calls here: the filters come from the caller (ptrace_seccomp.h
// reads them from a thread).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace stub::process {

// One instruction, laid out as the kernel's struct sock_filter.
struct BpfInstruction {
  uint16_t code = 0;
  uint8_t jt = 0;
  uint8_t jf = 0;
  uint32_t k = 0;
};
static_assert(sizeof(BpfInstruction) == 8);

// The call as a filter sees it (struct seccomp_data).
struct SeccompCall {
  int32_t number = 0;
  uint32_t arch = 0;
  uint64_t pc = 0;  // seccomp_data.instruction_pointer: past the `syscall`
  std::array<uint64_t, 6> args{};
};

// The action word one filter returns for the call; nullopt for a program
// seccomp's checker would not have taken (an unknown instruction, a load
// outside seccomp_data, a jump or a run past the end), which the kernel
// never runs, so btstub cannot say what it means.
std::optional<uint32_t> run_seccomp_filter(std::span<const BpfInstruction> filter, const SeccompCall& call);

// What the kernel makes of a thread's filters (each of them runs; the
// answer whose action comes first in the kernel's order wins: kill the
// process, kill the thread, trap, errno, user notification, trace, log,
// allow). nullopt where one of them is unknown (above).
std::optional<uint32_t> seccomp_verdict(const std::vector<std::vector<BpfInstruction>>& filters,
                                        const SeccompCall& call);

// Whether a call with that answer leaves the thread alive and nobody but
// btstub the wiser: made (allowed, logged), or failed in a way btstub
// takes as the call's failure (an errno; a trap, whose SIGSYS btstub
// takes; ENOSYS, given to a call a filter would trace, as btstub asks for
// no seccomp stops).
bool seccomp_action_harmless(uint32_t action);

}  // namespace stub::process
