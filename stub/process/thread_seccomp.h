#pragma once
// Whether a system call btstub would make in a stopped thread of the
// program is one the thread's seccomp state lets through harmlessly
// (seccomp_filter.h), read from /proc/TID/status and the filters
// themselves (PTRACE_SECCOMP_GET_FILTER).
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace stub::process {

enum class SeccompAnswer {
  Harmless,  // no filter, or what they answer leaves the thread alive and unseen
  Harmful,   // strict mode, a kill, a supervisor's notification
  Unknown,   // the filters cannot be read (btstub without CAP_SYS_ADMIN, or under seccomp itself)
};

// `pc` is where the thread's `syscall` instruction stands.
SeccompAnswer seccomp_answer(pid_t tid, long number, const std::vector<uint64_t>& args, uint64_t pc);

}  // namespace stub::process
