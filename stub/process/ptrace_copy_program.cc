// PtraceProcess::fork_copy: a checkpoint of the recorded program
// (stub/process/process_copy.h).
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <system_error>

#include "stub/process/copy_shared_memory.h"
#include "stub/process/proc_maps.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"
#include "stub/process/restart_codes.h"
#include "stub/process/thread_signal_masks.h"

namespace stub::process {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

namespace {

// The copy's file descriptors are the program's (a fork's table): files,
// pipes, sockets and locks the program closes would stay open in every
// checkpoint for as long as it lives, and other processes would see that
// (a pipe's reader never gets its end of file, a flock stays held, a port
// cannot be bound again). A copy never makes a system call of the
// program's (each is a barrier no re-run crosses), so it needs none: all
// are closed, before the program runs on. Without close_range (before
// Linux 5.9) one by one, as /proc lists them.
Expected<void> close_program_files(pid_t copy) {
  auto all = inject_syscall(copy, SYS_close_range, {0, ~0u, 0});
  if (!all) return all.error();
  if (!all->signals_met.empty()) return make_error(ErrorCode::Internal, "Cannot close the files of the copy of the program");
  if (all->result == 0) return {};
  if (all->result != -ENOSYS) {
    return make_error(ErrorCode::Internal, "Cannot close the files of the copy of the program (errno " +
                                               std::to_string(-all->result) + ")");
  }
  std::error_code error;
  std::vector<uint64_t> fds;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(copy) + "/fd", error)) {
    const std::string name = entry.path().filename().string();
    uint64_t fd = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec == std::errc{}) fds.push_back(fd);
  }
  if (error) return make_error(ErrorCode::Internal, "Cannot list the files of the copy of the program");
  for (uint64_t fd : fds) {
    if (auto r = copy_syscall(copy, SYS_close, {fd}, "close a file", 0); !r) return r;
  }
  return {};
}

// Whether a signal the thread does not block waits for it, in its own
// queue or its process's, or the answer is unknown.
// One it blocks stops no injected call, is not the copy's (a clone starts
// with none pending), and reaches the program only after a system call
// that unblocks or takes it: a barrier no copy crosses. A program that
// blocks SIGCHLD (to take it with signalfd or sigwait) has one waiting
// from a child's exit to that call, and gets checkpoints meanwhile.
bool unblocked_signal_waiting(pid_t tid) {
  const std::optional<ThreadSignalMasks> masks = read_thread_signal_masks(tid);
  return !masks || masks->unblocked_pending() != 0;
}

bool in_shared_mapping(const std::vector<MemoryMapping>& maps, uint64_t addr) {
  return std::any_of(maps.begin(), maps.end(),
                     [&](const MemoryMapping& m) { return m.shared && addr >= m.begin && addr < m.end; });
}

}  // namespace

bool PtraceProcess::signal_waits(pid_t tid, int signal) {
  const std::optional<ThreadSignalMasks> masks = read_thread_signal_masks(tid);
  return masks && ThreadSignalMasks::holds(masks->unblocked_pending(), signal);
}

Expected<std::unique_ptr<ProcessCopy>> PtraceProcess::fork_copy(pid_t tid, const std::vector<pid_t>& idle) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  // An attached program's copy would be its parent's child, not ours.
  if (attached_) return make_error(ErrorCode::NotSupported, "No copies of an attached program");
  if (!btstub_is_parent_) return make_error(ErrorCode::NotSupported, "No copies of a fork child (they would be its parent's)");
  if (ending_) return make_error(ErrorCode::NotSupported, "The program has ended");
  if (threads_.size() != 1) reap_ended_threads(tid);
  if (threads_.count(tid) == 0) return make_error(ErrorCode::NoProcess, "No such thread");
  // The copy has this thread alone: it stands for the program only while
  // no other thread runs code (the tracer's word: it hears of each resume).
  const bool others_idle = std::all_of(threads_.begin(), threads_.end(), [&](const auto& entry) {
    return entry.first == tid || entry.second.exited ||
           std::find(idle.begin(), idle.end(), entry.first) != idle.end();
  });
  if (!others_idle) return make_error(ErrorCode::NotSupported, "No copies while another thread runs");
  ThreadState& thread = threads_.at(tid);
  if (thread.running) return make_error(ErrorCode::InvalidArgument, "The thread is running");
  // Stopped inside a system call the kernel makes again as the thread
  // resumes (a signal interrupted it): the call btstub would inject runs
  // first and takes what the kernel keeps for that restart. sigsuspend,
  // ppoll and pselect lose the mask they replaced (restored as the injected
  // call returns), so a signal they had let through is blocked again and
  // the program waits for ever; nanosleep's restart would come back as
  // an error. No copy here: the next stop of the thread takes it.
  user_regs_struct regs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &regs); !r) return r.error();
  if (in_restarted_system_call(regs.orig_rax, regs.rax)) {
    return make_error(ErrorCode::NotSupported, "The thread stands in a system call the kernel makes again");
  }
  // A signal waiting would stop the injected clone first, and belongs to
  // the client's next stop: no copy now. One the thread blocks does neither.
  auto waiting = signal_waiting(tid);
  if (!waiting || (*waiting && unblocked_signal_waiting(tid)) || thread.owed_signal != 0 || thread.pending) {
    return make_error(ErrorCode::NotSupported, "A signal is on its way to the program");
  }
  // The stop may be a signal's, delivered when the thread resumes: the
  // injected clone ends in a trap stop of its own, so the signal's siginfo
  // is put back for that delivery.
  std::optional<std::vector<MemoryMapping>> shared = read_shared_maps(pid_);
  if (!shared) return make_error(ErrorCode::Internal, "Cannot read the program's memory maps");
  // btstub's own (a translating tracer's logs): not in the copy at all.
  std::erase_if(*shared, [&](const MemoryMapping& m) {
    return std::any_of(tracer_shared_.begin(), tracer_shared_.end(), [&](const TracerSharedArea& a) {
      return m.begin == a.begin && m.end == a.end && m.inode == a.inode;
    });
  });
  const std::vector<MemoryMapping>& maps = *shared;
  auto pc = read_pc(tid);
  if (!pc) return pc.error();
  // The clone borrows the bytes at the pc for its `syscall`, and so would
  // every system call injected into the copy: in shared code other
  // processes would see them.
  if (in_shared_mapping(maps, *pc)) {
    return make_error(ErrorCode::NotSupported, "No copies while the program runs code in shared memory");
  }
  if (auto allowed = seccomp_lets_through(tid, SYS_clone, kCopyCloneArgs); !allowed) return allowed.error();
  auto siginfo = read_siginfo(tid);
  int ended = -1;
  auto injected = inject_clone(tid, &ended);
  if (ended != -1) {
    // Killed from outside while being copied (the next wait would find
    // nothing).
    give_back_end(tid, ended);
    return injected.error();
  }
  if (siginfo) (void)write_siginfo(tid, *siginfo);
  if (!injected) return injected.error();
  // One that came during the clone anyway is sent again, to be seen as if
  // it came just after (its sender is then btstub).
  for (int signal : injected->signals_met) requeue_signal(tid, signal);
  if (injected->child == 0) {
    return make_error(ErrorCode::Internal,
                      "The program's clone for a copy failed (errno " + std::to_string(injected->failed) + ")");
  }
  auto copy = ProcessCopy::adopt(injected->child);
  // A copy must never read a new time stamp counter value where the
  // program read another: its reads fault, and a re-run stops there
  // (copies forked from it inherit this), set before its first run. The
  // tracer takes a checkpoint after each of the program's reads, so a copy
  // should never meet one.
  copy->owe_tsc_fault();
  copy->note_shared_files(shared_writable_files(maps));
  // A re-run of this copy to the next barrier or checkpoint must find there
  // what the program had then: the snapshot's digest is kept with it.
  auto privatized = privatize_shared_mappings(pid_, copy->pid(), maps);
  if (!privatized) return privatized.error();
  if (!privatized->ranges.empty()) copy->note_shared_snapshot(std::move(*privatized));
  if (auto r = close_program_files(copy->pid()); !r) return r.error();
  // The copy runs without us watching its int3s: it gets the program's
  // bytes, when first used (most checkpoints never are).
  copy->owe_bytes(inserted_int3s());
  return copy;
}

std::optional<std::string> ProcessCopy::file_changed_since_taken() const {
  const int64_t taken_ns = nanoseconds(taken_);
  std::set<uint64_t> asked;
  for (const MemoryMapping& m : read_maps(pid_)) {
    if (m.shared || m.inode == 0 || !asked.insert(m.inode).second) continue;
    if ((shared_files_ && shared_files_->count(m.inode) != 0) || mapped_file_changed_after(pid_, m, taken_ns)) {
      return m.name;
    }
  }
  return std::nullopt;
}

}  // namespace stub::process
