#include "protocol/parse_util.h"

#include <charconv>
#include <limits>

namespace protocol::detail {

std::optional<uint64_t> parse_hex_u64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  // from_chars would accept neither "0x" nor '+', which is what we want; a
  // '-' cannot slip through for an unsigned target either.
  auto [ptr, ec] = std::from_chars(text.data(), end, value, 16);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

std::optional<int64_t> parse_hex_i64(std::string_view text) {
  bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  auto magnitude = parse_hex_u64(text);
  if (!magnitude) return std::nullopt;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (*magnitude > kMax) return std::nullopt;
  int64_t value = static_cast<int64_t>(*magnitude);
  return negative ? -value : value;
}

std::optional<int> parse_hex_int(std::string_view text) {
  auto value = parse_hex_i64(text);
  if (!value || *value > std::numeric_limits<int>::max() ||
      *value < std::numeric_limits<int>::min())
    return std::nullopt;
  return static_cast<int>(*value);
}

std::optional<std::pair<std::string_view, std::string_view>> split_once(std::string_view text,
                                                                        char sep) {
  auto pos = text.find(sep);
  if (pos == std::string_view::npos) return std::nullopt;
  return std::make_pair(text.substr(0, pos), text.substr(pos + 1));
}

std::vector<std::string_view> split_all(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    auto pos = text.find(sep);
    parts.push_back(text.substr(0, pos));
    if (pos == std::string_view::npos) break;
    text.remove_prefix(pos + 1);
  }
  return parts;
}

}  // namespace protocol::detail
