#include "protocol/thread_id.h"

#include "protocol/parse_util.h"

namespace protocol {
namespace {

// One id component: hex, or -1; other negative values mean nothing.
std::optional<int64_t> parse_component(std::string_view text) {
  auto value = detail::parse_hex_i64(text);
  if (!value || *value < ThreadId::kAll) return std::nullopt;
  return value;
}

std::string format_component(int64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  // Unsigned magnitude so that even INT64_MIN cannot overflow.
  uint64_t v = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return value < 0 ? "-" + out : out;
}

}  // namespace

std::optional<ThreadId> parse_thread_id(std::string_view text) {
  ThreadId id;
  if (!text.empty() && text.front() == 'p') {
    text.remove_prefix(1);
    auto dot = text.find('.');
    auto pid = parse_component(text.substr(0, dot));
    if (!pid) return std::nullopt;
    id.pid = *pid;
    if (dot == std::string_view::npos) {
      // "p<pid>" alone names every thread of that process.
      id.tid = ThreadId::kAll;
      return id;
    }
    text.remove_prefix(dot + 1);
  }
  auto tid = parse_component(text);
  if (!tid) return std::nullopt;
  id.tid = *tid;
  return id;
}

std::string format_thread_id(const ThreadId& id, bool multiprocess) {
  if (!multiprocess) return format_component(id.tid);
  return "p" + format_component(id.pid) + "." + format_component(id.tid);
}

}  // namespace protocol
