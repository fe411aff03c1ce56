#include "stub/process/wait_routes.h"

#include <algorithm>

namespace stub::process {

WaitRoutes& WaitRoutes::instance() {
  static WaitRoutes routes;
  return routes;
}

void WaitRoutes::enroll(WaitOwner* owner) {
  if (std::find(owners_.begin(), owners_.end(), owner) == owners_.end()) owners_.push_back(owner);
}

void WaitRoutes::leave(WaitOwner* owner) {
  std::erase(owners_, owner);
  handed_.erase(owner);
}

void WaitRoutes::drop_handed(WaitOwner* owner) { handed_.erase(owner); }

WaitOwner* WaitRoutes::owner_of(pid_t tid) const {
  for (WaitOwner* owner : owners_) {
    if (owner->owns_thread(tid)) return owner;
  }
  return nullptr;
}

void WaitRoutes::hand_over(WaitOwner* owner, pid_t tid, int status) { handed_[owner].emplace_back(tid, status); }

std::optional<std::pair<pid_t, int>> WaitRoutes::take_handed(WaitOwner* owner, pid_t want) {
  auto found = handed_.find(owner);
  if (found == handed_.end()) return std::nullopt;
  auto& queue = found->second;
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if (want != -1 && it->first != want) continue;
    auto taken = *it;
    queue.erase(it);
    if (queue.empty()) handed_.erase(found);
    return taken;
  }
  return std::nullopt;
}

std::optional<int> WaitRoutes::take_unclaimed(pid_t tid) {
  auto found = unclaimed_.find(tid);
  if (found == unclaimed_.end()) return std::nullopt;
  int status = found->second;
  unclaimed_.erase(found);
  return status;
}

void WaitRoutes::forget_unclaimed_of(WaitOwner* owner) {
  if (owners_.size() == 1 && owners_.front() == owner) unclaimed_.clear();
}

}  // namespace stub::process
