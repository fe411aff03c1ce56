#include "protocol/stop_notifications.h"

#include <algorithm>

namespace protocol {

std::optional<std::string> StopNotifications::push(std::string stop, int64_t thread, int64_t process) {
  const bool first = queue_.empty();
  queue_.push_back({std::move(stop), thread, process});
  if (!first) return std::nullopt;
  return std::string(kName) + ":" + queue_.front().stop;
}

std::string StopNotifications::acknowledge() {
  if (!queue_.empty()) queue_.pop_front();
  return head_or_ok();
}

std::string StopNotifications::head_or_ok() const { return queue_.empty() ? std::string("OK") : queue_.front().stop; }

bool StopNotifications::holds(int64_t thread) const {
  return thread != 0 &&
         std::any_of(queue_.begin(), queue_.end(), [thread](const Entry& entry) { return entry.thread == thread; });
}

void StopNotifications::discard_unsent(std::optional<int64_t> process) {
  if (queue_.size() <= 1) return;
  queue_.erase(std::remove_if(queue_.begin() + 1, queue_.end(),
                              [process](const Entry& entry) { return !process || entry.process == *process; }),
               queue_.end());
}

}  // namespace protocol
