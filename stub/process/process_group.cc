#include "stub/process/process_group.h"

#include <algorithm>

namespace stub::process {

void ProcessGroup::reset(Process* program) {
  live_.clear();
  children_.clear();
  if (program != nullptr) live_.push_back(program);
}

void ProcessGroup::add(std::unique_ptr<Process> child) {
  live_.push_back(child.get());
  children_.push_back(std::move(child));
}

void ProcessGroup::remove(Process* process) {
  std::erase(live_, process);
  std::erase_if(children_, [process](const auto& child) { return child.get() == process; });
}

Process* ProcessGroup::find(pid_t pid) const {
  for (Process* process : live_) {
    if (process->pid() == pid) return process;
  }
  return nullptr;
}

Process* ProcessGroup::owner_of(pid_t tid) const {
  for (Process* process : live_) {
    auto tids = process->threads();
    if (std::find(tids.begin(), tids.end(), tid) != tids.end()) return process;
  }
  return nullptr;
}

Process* ProcessGroup::holder_of_fork_child(pid_t child) const {
  for (Process* process : live_) {
    if (process->fork_child() != 0 && process->fork_child() == child) return process;
  }
  return nullptr;
}

std::optional<ProcessEvent> ProcessGroup::poll_event() {
  if (live_.size() == 1) {  // the usual case, on every stop of a traced program
    auto event = live_.front()->poll_event();
    if (event) event->pid = live_.front()->pid();
    return event;
  }
  std::vector<Process*> order;
  for (Process* process : live_) {
    if (process->has_pending_event()) order.push_back(process);
  }
  for (Process* process : live_) {
    if (!process->has_pending_event()) order.push_back(process);
  }
  for (Process* process : order) {
    auto event = process->poll_event();
    if (!event) continue;
    // One process with nothing left running is no stop while another runs.
    if (event->kind == ProcessEvent::Kind::NoResumed && others_running(process)) continue;
    event->pid = process->pid();
    if (!non_stop_) stop_others(process);
    return event;
  }
  return std::nullopt;
}

bool ProcessGroup::others_running(const Process* except) const {
  return std::any_of(live_.begin(), live_.end(),
                     [except](const Process* process) { return process != except && process->has_running_threads(); });
}

void ProcessGroup::stop_others(const Process* except) {
  for (Process* process : live_) {
    if (process != except) process->stop_all();
  }
}

}  // namespace stub::process
