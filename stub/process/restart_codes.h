#pragma once
// The kernel's restart codes (include/linux/errno.h, not in user headers):
// a system call a signal interrupted returns one of them in rax while the
// thread stops for the signal, and the kernel makes the call again (the pc
// moved back onto the `syscall`) when the thread resumes without a handler
// run in between.
#include <cstdint>

namespace stub::process {

// ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK
// (-515, ENOIOCTLCMD, never reaches a thread).
inline bool is_restart_code(uint64_t rax) {
  const auto result = static_cast<int64_t>(rax);
  return result == -512 || result == -513 || result == -514 || result == -516;
}

// A thread stopped inside system call `orig_rax` (-1 outside any) that the
// kernel makes again when it resumes.
inline bool in_restarted_system_call(uint64_t orig_rax, uint64_t rax) {
  return static_cast<int64_t>(orig_rax) >= 0 && is_restart_code(rax);
}

}  // namespace stub::process
