#pragma once
// The processes one session debugs: the program (not owned: the server or
// a test owns it) and the fork children the client keeps debugging beside
// it (gdb's detach-on-fork off), owned here. It finds the process of a pid
// or thread, polls them all for the next event, and keeps all-stop across
// processes: when one reports an event, every other one is stopped too,
// their own events kept pending (Process::stop_all).
#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "stub/process/process.h"

namespace stub::process {

class ProcessGroup {
 public:
  // Forgets every process; fork children are dropped (a launched one is
  // killed, an attached one detached, by its destructor).
  void reset(Process* program);
  void add(std::unique_ptr<Process> child);
  // A process that exited, was killed or detached; a fork child is dropped.
  void remove(Process* process);

  bool empty() const { return live_.empty(); }
  const std::vector<Process*>& live() const { return live_; }
  Process* first() const { return live_.empty() ? nullptr : live_.front(); }
  Process* find(pid_t pid) const;
  Process* owner_of(pid_t tid) const;
  // The process holding a fork child that is not debugged yet, if any.
  Process* holder_of_fork_child(pid_t child) const;

  // The next event of any process, with ProcessEvent::pid set. Events
  // kept while stopping all come first, as within one process (a fork
  // child's exit kept while its parent's vforkdone was reported is not
  // overtaken by the parent's exit); then older processes are asked first:
  // a vfork parent's vforkdone, which the kernel produces before the
  // child's exit is reported, then comes first, as gdbserver reports them.
  std::optional<ProcessEvent> poll_event();
  // Stops every process but `except` (all-stop).
  void stop_others(const Process* except);
  // Non-stop mode: an event stops nothing else, in any process.
  void set_non_stop(bool on) { non_stop_ = on; }
  bool non_stop() const { return non_stop_; }
  // Whether a process but `except` has threads running.
  bool others_running(const Process* except) const;

 private:
  std::vector<Process*> live_;
  std::vector<std::unique_ptr<Process>> children_;
  bool non_stop_ = false;
};

}  // namespace stub::process
