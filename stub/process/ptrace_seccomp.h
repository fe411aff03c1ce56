#pragma once
// A stopped thread's seccomp state, read from /proc/TID/status and the
// filters themselves (PTRACE_SECCOMP_GET_FILTER): whether a system call
// btstub would make there is one it lets through harmlessly
// (seccomp_filter.h).
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace stub::process {

enum class SeccompAnswer {
  Harmless,  // no filter, or what they answer leaves the thread alive and unseen
  Harmful,   // strict mode, a kill, a supervisor's notification
  Unknown,   // the filters cannot be read (btstub without CAP_SYS_ADMIN, or under seccomp itself)
};

// Whether the thread runs under seccomp, strict or filtered (unknown
// counts as yes). A filter may kill the thread at a system call it does
// not list, or trap it (SIGSYS, the call's number left in rax as if it
// were a result): btstub's memfd_create must not be the one.
bool under_seccomp(pid_t tid);

// `pc` is where the thread's `syscall` instruction stands.
SeccompAnswer seccomp_answer(pid_t tid, long number, const std::vector<uint64_t>& args, uint64_t pc);

}  // namespace stub::process
