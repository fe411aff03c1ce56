#pragma once
// Thread ids as the remote protocol writes them: `p<pid>.<tid>` with
// multiprocess, or a bare `<tid>`; -1 means all, 0 means any.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace protocol {

struct ThreadId {
  static constexpr int64_t kAll = -1;
  static constexpr int64_t kAny = 0;
  int64_t pid = kAny;  // kAny when the client did not say
  int64_t tid = kAny;

  bool is_all() const { return tid == kAll; }
  bool is_any() const { return tid == kAny; }
  friend bool operator==(const ThreadId&, const ThreadId&) = default;
};

// Parses "p1f.2a", "p1f.-1", "2a", "-1", "0". nullopt on malformed input.
std::optional<ThreadId> parse_thread_id(std::string_view text);
// Formats as "p<pid>.<tid>" when multiprocess, else "<tid>" (hex).
std::string format_thread_id(const ThreadId& id, bool multiprocess);

}  // namespace protocol
