#pragma once
// waitpid is process-wide: a wait for any tracee (waitpid(-1)) by one
// debugged process can return the status of a thread another debugged
// process owns (gdb's detach-on-fork off debugs a parent and its fork child
// at once). Every PtraceProcess enrolls here; a status reaped for a thread
// another owner has is handed over to that owner, which takes it before it
// waits itself. A status of a thread nobody knows yet (a new thread or fork
// child reporting before its creator's clone/fork event) is kept unclaimed
// until that event names it, whoever's wait reaped it.
//
// Single-threaded, like every ptrace call (ptrace binds tracees to a thread).
#include <sys/types.h>

#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace stub::process {

class WaitOwner {
 public:
  virtual bool owns_thread(pid_t tid) const = 0;

 protected:
  ~WaitOwner() = default;
};

class WaitRoutes {
 public:
  static WaitRoutes& instance();

  void enroll(WaitOwner* owner);
  // Also drops the statuses handed to it.
  void leave(WaitOwner* owner);
  void drop_handed(WaitOwner* owner);

  // The enrolled owner of `tid`, nullptr if none.
  WaitOwner* owner_of(pid_t tid) const;
  void hand_over(WaitOwner* owner, pid_t tid, int status);
  // The oldest status handed to `owner` for `want` (-1: any of its threads).
  std::optional<std::pair<pid_t, int>> take_handed(WaitOwner* owner, pid_t want);

  void keep_unclaimed(pid_t tid, int status) { unclaimed_[tid] = status; }
  std::optional<int> take_unclaimed(pid_t tid);
  // `owner` ended or exec'd: its threads that were being created are gone
  // with it. While it is the only owner enrolled, every unclaimed status
  // was one of those; none will be claimed now, and a later thread reusing
  // the tid must not pick one up. (With several owners nobody can tell
  // whose they are, and they stay.)
  void forget_unclaimed_of(WaitOwner* owner);

 private:
  std::vector<WaitOwner*> owners_;
  std::map<WaitOwner*, std::deque<std::pair<pid_t, int>>> handed_;
  std::map<pid_t, int> unclaimed_;
};

}  // namespace stub::process
