#pragma once
// Splits a libFuzzer input into the pieces a target needs (integers, short
// strings, the rest), without ever reading past the end: an exhausted input
// yields zeros and empty strings, so every byte string is a valid test case.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace fuzz {

class Input {
 public:
  Input(const uint8_t* data, std::size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return rest_.empty(); }
  std::size_t size() const { return rest_.size(); }

  uint8_t byte() {
    if (rest_.empty()) return 0;
    uint8_t b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // Little-endian, `n` bytes (at most 8).
  uint64_t integer(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }
  // Up to `max` bytes.
  std::string_view bytes(std::size_t max) {
    std::size_t n = max < rest_.size() ? max : rest_.size();
    std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return out;
  }
  std::string_view remaining() {
    std::string_view out = rest_;
    rest_ = {};
    return out;
  }

 private:
  std::string_view rest_;
};

// An invariant broke: report it and abort, so libFuzzer saves the input.
[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  if (!detail.empty()) {
    std::fprintf(stderr, "  detail (%zu bytes): ", detail.size());
    for (char c : detail.substr(0, 200)) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f) std::fputc(u, stderr); else std::fprintf(stderr, "\\x%02x", u);
    }
    std::fputc('\n', stderr);
  }
  std::abort();
}

inline void check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

}  // namespace fuzz
