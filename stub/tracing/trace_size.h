#pragma once
// Branch-trace buffer sizes as people write them: `--trace-size=1m` on the
// command line, `monitor record size 64k` in a session.
#include <cstdint>
#include <string>

#include "protocol/expected.h"

namespace stub::tracing {

inline constexpr uint64_t kMinTraceSize = 24;                  // one BTS record
inline constexpr uint64_t kMaxTraceSize = uint64_t{1} << 32;   // 4 GiB
// The software tracer's bound when none is given: 11,184,810 branches.
inline constexpr uint64_t kSoftwareTraceDefaultSize = uint64_t{256} << 20;

// Decimal or 0x hex bytes, with an optional k/K or m/M suffix, within the
// limits above. The error says only what is wrong ("expected a number of
// bytes", "at most ... bytes"); the caller names the option.
btstub::Expected<uint64_t> parse_trace_size(const std::string& text);

}  // namespace stub::tracing
