#include "stub/tracing/trace_size.h"

#include <charconv>

namespace stub::tracing {

using btstub::ErrorCode;
using btstub::make_error;

btstub::Expected<uint64_t> parse_trace_size(const std::string& text) {
  auto bad = [](const std::string& why) { return make_error(ErrorCode::InvalidArgument, why); };
  std::string digits = text;
  uint64_t unit = 1;
  if (!digits.empty() && (digits.back() == 'k' || digits.back() == 'K')) unit = 1024;
  if (!digits.empty() && (digits.back() == 'm' || digits.back() == 'M')) unit = 1024 * 1024;
  if (unit != 1) digits.pop_back();
  int base = 10;
  if (digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0) {
    digits = digits.substr(2);
    base = 16;
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    return bad("expected a number of bytes");
  }
  if (value > kMaxTraceSize / unit) return bad("at most " + std::to_string(kMaxTraceSize) + " bytes");
  value *= unit;
  if (value < kMinTraceSize) return bad("at least " + std::to_string(kMinTraceSize) + " bytes (one branch)");
  return value;
}

}  // namespace stub::tracing
