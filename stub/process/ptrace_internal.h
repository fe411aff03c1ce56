#pragma once
// Helpers shared by the stub/process/ptrace_*.cc files, which alone may include
// <sys/ptrace.h>; this header does not, so requests travel as plain ints.
#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/expected.h"
#include "protocol/hex_text.h"
#include "protocol/register_file.h"

struct user_regs_struct;

namespace stub::process::ptrace_detail {

// ptrace(request, tid, addr, data), with the general registers cached per
// stop (ptrace_calls.cc); errno becomes a btstub::Error naming the
// request, and stays set for callers that phrase their own message.
btstub::Expected<long> do_ptrace(int request, pid_t tid, uint64_t addr, void* data);

inline void* signal_arg(int signal) { return reinterpret_cast<void*>(static_cast<uintptr_t>(signal)); }

// Sets a stopped thread's general registers as PTRACE_SETREGS would, but
// only reaches the kernel when the thread is next resumed or detached (or
// never, if another write comes first). For writes that cannot fail, such
// as moving rip back over an int3.
void defer_set_registers(pid_t tid, const user_regs_struct& regs);

// waitpid, retried on EINTR.
pid_t wait_retry(pid_t pid, int* status, int flags);
// wait_retry for one child of btstub's (never reaped elsewhere meanwhile)
// that may run without end: when it has not changed state within `limit`
// (a timer's SIGALRM to this thread interrupts the wait), it is killed with
// SIGKILL (it is not reaped yet: the pid is still its own), *overdue is
// set, and the wait goes on for that end.
pid_t wait_with_limit(pid_t pid, int* status, int flags, std::chrono::milliseconds limit, bool* overdue);

// The first wait status of a tracee a clone or fork just created: a wait
// for any tracee may have reaped it before the event named it (it then
// waits unclaimed in WaitRoutes), else it is waited for now. 0 when it
// cannot be had.
int first_status_of_new_tracee(pid_t tid);

using protocol::hex;

// Every register of a stopped thread (general, x87/SSE, bases), in the wire
// layout.
btstub::Expected<protocol::RegisterFile> read_thread_registers(pid_t tid);

// The arguments of a copy's clone: CLONE_PARENT and exit signal 0 (nobody
// is told when the copy dies), the rest 0.
inline const std::vector<uint64_t> kCopyCloneArgs = {CLONE_PARENT, 0, 0, 0, 0, 0};

// Makes the stopped thread `tid`, alone in its process, run
// clone(CLONE_PARENT, no exit signal) at its pc (two bytes of code are
// borrowed for the `syscall` and put back), then puts its registers back as
// they were. The copy is our tracee (it inherits the ptrace options),
// stopped, with the same registers; its memory still holds whatever int3s
// the program's does. Signals that stopped `tid` meanwhile are returned,
// not delivered: they belong to the program. A clone that failed (a
// resource limit, a seccomp filter) leaves `child` 0 and its errno in
// `failed`, the thread as it was.
struct InjectedClone {
  pid_t child = 0;
  int failed = 0;
  std::vector<int> signals_met;
};
// `ended` (when given) gets the wait status when the program ended on the
// way (NoProcess): that status is reaped here, so only the caller can still
// report the end.
btstub::Expected<InjectedClone> inject_clone(pid_t tid, int* ended = nullptr);

// Makes the stopped thread `tid` run one system call at its pc (as
// inject_clone borrows two bytes), then puts its registers back. The
// call's result (negative errno on failure), and the signals that stopped
// it meanwhile. `ended` as for inject_clone.
struct InjectedCall {
  long result = 0;
  std::vector<int> signals_met;
};
btstub::Expected<InjectedCall> inject_syscall(pid_t tid, long number, std::vector<uint64_t> args,
                                              int* ended = nullptr);

// DRn in the user area (PTRACE_PEEKUSER/POKEUSER), and writing it.
uint64_t debugreg_offset(int n);
btstub::Expected<void> poke_debugreg(pid_t tid, int n, uint64_t value);

// Reads [addr, addr+len) through an open /proc/PID/mem into `out`, going
// on after short reads; returns how many bytes were read (0: none).
std::size_t read_mem_fd(int fd, uint64_t addr, uint8_t* out, std::size_t len);

// Writes bytes into a stopped tracee's memory through /proc/PID/mem.
bool write_tracee_memory(pid_t pid, uint64_t addr, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_tracee_memory(pid_t pid, uint64_t addr, std::size_t len);

constexpr uint8_t kInt3 = 0xcc;

// The fields of /proc/PID/task/TID/stat from the third (the state letter)
// on, so field n is at index n - 3; empty when the thread is gone. The
// name (field 2) may hold spaces and parentheses, so fields are counted
// after its last ')'.
std::vector<std::string> thread_stat_fields(pid_t pid, pid_t tid);

}  // namespace stub::process::ptrace_detail
