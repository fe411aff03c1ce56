// Hex and binary encodings: hex_decode/hex_encode, escape_binary/
// unescape_binary, and the hex number parsers every request uses.
//
// The whole input is the text. Invariants:
//  - hex_decode(x) succeeds exactly for even-length all-hex x, and then
//    hex_encode of the bytes is x in lower case (and back again).
//  - unescape_binary(escape_binary(b)) == b for any b, and the escaped
//    form has no raw '#', '$' or '*' and only '}' followed by a byte.
//  - unescape_binary(x), when it succeeds, escapes to something that
//    unescapes to the same bytes.
//  - parse_hex_u64 agrees with a reference parser (digits only, <= 64 bits),
//    parse_hex_i64 with the same plus one leading '-', parse_hex_int fits int.
#include <cctype>
#include <optional>
#include <string>

#include "fuzz_input.h"
#include "protocol/parse_util.h"
#include "protocol/replies.h"

namespace {

using namespace protocol;

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<uint64_t> reference_u64(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!is_hex(c)) return std::nullopt;
    if (v >> 60) return std::nullopt;
    int d = c <= '9' ? c - '0' : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

void check_hex(std::string_view text) {
  bool valid = text.size() % 2 == 0;
  for (char c : text) valid = valid && is_hex(c);
  auto bytes = hex_decode(text);
  fuzz::check(bytes.has_value() == valid, "hex_decode accepts/refuses the wrong inputs", text);
  if (bytes) {
    fuzz::check(bytes->size() * 2 == text.size(), "hex_decode length", text);
    fuzz::check(hex_encode(bytes->data(), bytes->size()) == lower(text), "hex round trip", text);
  }
  std::string encoded = hex_encode(text);
  fuzz::check(encoded.size() == text.size() * 2, "hex_encode length", text);
  auto back = hex_decode(encoded);
  fuzz::check(back && std::string(back->begin(), back->end()) == text, "hex_encode round trip", text);
}

void check_escape(std::string_view raw) {
  std::string escaped = escape_binary(raw);
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    char c = escaped[i];
    fuzz::check(c != '#' && c != '$' && c != '*', "raw special byte in escaped data", escaped);
    if (c == '}') {
      fuzz::check(i + 1 < escaped.size(), "escape at the end", escaped);
      ++i;
    }
  }
  auto back = unescape_binary(escaped);
  fuzz::check(back && *back == raw, "escape round trip", raw);

  auto unescaped = unescape_binary(raw);
  bool lone_brace = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '}') {
      if (i + 1 == raw.size()) lone_brace = true;
      ++i;
    }
  }
  fuzz::check(unescaped.has_value() == !lone_brace, "unescape accepts/refuses the wrong inputs", raw);
  if (unescaped) {
    fuzz::check(unescaped->size() <= raw.size(), "unescape grew the data", raw);
    auto again = unescape_binary(escape_binary(*unescaped));
    fuzz::check(again && *again == *unescaped, "unescape/escape round trip", raw);
  }
}

void check_numbers(std::string_view text) {
  auto u = detail::parse_hex_u64(text);
  auto ref = reference_u64(text);
  fuzz::check(u == ref, "parse_hex_u64 disagrees with the reference", text);

  // i64: an optional '-' and a magnitude that fits int64_t.
  auto i = detail::parse_hex_i64(text);
  bool negative = !text.empty() && text.front() == '-';
  auto mag = negative ? reference_u64(text.substr(1)) : ref;
  constexpr uint64_t kMax = uint64_t{1} << 63;
  bool fits = mag && *mag < kMax;
  fuzz::check(i.has_value() == fits, "parse_hex_i64 accepts/refuses the wrong inputs", text);
  if (i) {
    int64_t want = negative ? -static_cast<int64_t>(*mag) : static_cast<int64_t>(*mag);
    fuzz::check(*i == want, "parse_hex_i64 value", text);
  }
  auto n = detail::parse_hex_int(text);
  bool int_fits = i && *i >= INT32_MIN && *i <= INT32_MAX;
  fuzz::check(n.has_value() == int_fits && (!n || *n == *i), "parse_hex_int", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_hex(text);
  check_escape(text);
  check_numbers(text);
  if (auto comma = text.find(','); comma != std::string_view::npos) {
    auto parts = detail::split_all(text, ',');
    std::size_t total = parts.size() - 1;
    for (auto p : parts) total += p.size();
    fuzz::check(total == text.size(), "split_all lost bytes", text);
    auto once = detail::split_once(text, ',');
    fuzz::check(once && once->first.size() == comma, "split_once position", text);
  }
  return 0;
}
