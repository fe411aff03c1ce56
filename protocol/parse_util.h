#pragma once
// Small helpers shared by the request parsers (internal to protocol/).
// Everything returns nullopt instead of throwing, so a hostile packet can
// never take the stub down.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/expected.h"

namespace protocol::detail {

// Whole string as an unsigned hex number; nullopt on empty input, a non-hex
// digit or a value that does not fit 64 bits.
std::optional<uint64_t> parse_hex_u64(std::string_view text);
// Hex number with an optional leading '-' (pids/tids such as "-1").
std::optional<int64_t> parse_hex_i64(std::string_view text);
// Hex number that must fit an int (fds, flags, signals).
std::optional<int> parse_hex_int(std::string_view text);

// Splits at the first `sep`: {before, after}; nullopt when `sep` is absent.
std::optional<std::pair<std::string_view, std::string_view>> split_once(std::string_view text,
                                                                        char sep);
// Splits at every `sep` (keeps empty pieces).
std::vector<std::string_view> split_all(std::string_view text, char sep);

inline btstub::Error bad_packet(std::string message) {
  return btstub::make_error(btstub::ErrorCode::BadPacket, std::move(message));
}

}  // namespace protocol::detail
