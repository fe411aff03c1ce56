#pragma once
// Where the kernel's XSAVE register set (PTRACE_GETREGSET NT_X86_XSTATE)
// keeps each state component beyond FXSAVE, and which components this
// machine has. The ptrace buffer is in the standard (non-compacted) XSAVE
// format, whose offsets the CPU states in CPUID leaf 0xd; they differ
// between vendors (AMD puts PKRU elsewhere than Intel), so they are read,
// never assumed.
#include <cstddef>
#include <cstdint>

#include "protocol/amd64_registers.h"

namespace stub::process {

// XCR0 bits (state components) btstub maps into registers.
inline constexpr uint64_t kXstateX87 = 1u << 0, kXstateSse = 1u << 1, kXstateAvx = 1u << 2;
inline constexpr uint64_t kXstateBndregs = 1u << 3, kXstateBndcsr = 1u << 4;
inline constexpr uint64_t kXstateOpmask = 1u << 5, kXstateZmmHi256 = 1u << 6, kXstateHi16Zmm = 1u << 7;
inline constexpr uint64_t kXstatePkru = 1u << 9;
inline constexpr uint64_t kXstateAvx512 = kXstateOpmask | kXstateZmmHi256 | kXstateHi16Zmm;

struct XsaveLayout {
  uint64_t xcr0 = kXstateX87 | kXstateSse;  // the components the kernel enabled
  // Byte offsets of the components in the standard format (Intel's values
  // by default: what tests use).
  std::size_t avx = 576;         // ymm0..15 bits 128-255, 16 bytes each
  std::size_t bndregs = 960;     // bnd0..3, 16 bytes each
  std::size_t bndcsr = 1024;     // bndcfgu, bndstatus, 8 bytes each
  std::size_t opmask = 1088;     // k0..7, 8 bytes each
  std::size_t zmm_hi256 = 1152;  // zmm0..15 bits 256-511, 32 bytes each
  std::size_t hi16_zmm = 1664;   // zmm16..31 whole, 64 bytes each
  std::size_t pkru = 2688;       // 4 bytes
};

// This machine's layout (CPUID and XGETBV, read once). A CPU without
// XSAVE enabled by the OS gets the default: x87 and SSE only.
const XsaveLayout& host_xsave_layout();

// The register sets gdb describes for the components `xcr0` enables.
protocol::Amd64Features features_of(uint64_t xcr0);

}  // namespace stub::process
