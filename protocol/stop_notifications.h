#pragma once
// The queue of stop replies in non-stop mode, as gdbserver keeps it
// (gdbserver/notif.cc). A stop is queued; the first one queued into an
// empty queue goes to the client as a `%Stop:` notification at once. The
// client answers every notification, and every stop it is given, with
// vStopped: that takes the head (the stop it has) off the queue and
// replies with the next one, or OK once the queue is empty. `?` in
// non-stop mode queues a stop for every stopped thread and replies with
// the head the same way.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace protocol {

class StopNotifications {
 public:
  // The notification name that prefixes a stop in `%Stop:...`.
  static constexpr std::string_view kName = "Stop";

  // Queues a stop reply payload ("T05...", "W00", "N"); returns the
  // notification payload ("Stop:T05...") to send now when the queue was
  // empty, nullopt when the client is still draining earlier ones.
  // `thread`: the thread it is about (0: none), for holds(); `process`:
  // its process (0: none), for discard_unsent().
  std::optional<std::string> push(std::string stop, int64_t thread = 0, int64_t process = 0);
  // Queues without notifying (`?` in non-stop mode).
  void enqueue(std::string stop, int64_t thread = 0, int64_t process = 0) {
    queue_.push_back({std::move(stop), thread, process});
  }
  // Whether a stop of `thread` is queued that the client has not
  // acknowledged: a resume of every thread leaves it stopped (gdbserver's
  // in_queued_stop_replies), since the client does not know it stopped.
  bool holds(int64_t thread) const;
  // vStopped: the head is acknowledged; the reply is the next stop or OK.
  std::string acknowledge();
  // The head again, or OK when empty (the reply to `?`).
  std::string head_or_ok() const;
  // Drops the queued stops of `process` (every one: nullopt) but the
  // head, which the client has been sent and will acknowledge. A kill or
  // detach of one process leaves the others' stops to be told, as
  // gdbserver's discard_queued_stop_replies (ptid_t (pid)) does.
  void discard_unsent(std::optional<int64_t> process = std::nullopt);
  bool empty() const { return queue_.empty(); }
  std::size_t size() const { return queue_.size(); }

 private:
  struct Entry {
    std::string stop;
    int64_t thread = 0;
    int64_t process = 0;
  };
  std::deque<Entry> queue_;
};

}  // namespace protocol
