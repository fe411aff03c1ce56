#include "stub/process/xsave_layout.h"

#include <cpuid.h>

namespace stub::process {
namespace {

constexpr unsigned kOsxsaveBit = 1u << 27;  // CPUID.1:ECX: XGETBV usable

uint64_t read_xcr0() {
  uint32_t low = 0, high = 0;
  // XGETBV with ECX=0 (XCR0); encoded by hand so no -mxsave is needed.
  asm volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t{high} << 32) | low;
}

// Standard-format offset of state component `component` (CPUID 0xd.i:EBX).
std::size_t component_offset(unsigned component, std::size_t fallback) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(0xd, component, &eax, &ebx, &ecx, &edx) || eax == 0) return fallback;
  return ebx;
}

XsaveLayout detect() {
  XsaveLayout layout;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & kOsxsaveBit)) return layout;
  layout.xcr0 = read_xcr0();
  layout.avx = component_offset(2, layout.avx);
  layout.bndregs = component_offset(3, layout.bndregs);
  layout.bndcsr = component_offset(4, layout.bndcsr);
  layout.opmask = component_offset(5, layout.opmask);
  layout.zmm_hi256 = component_offset(6, layout.zmm_hi256);
  layout.hi16_zmm = component_offset(7, layout.hi16_zmm);
  layout.pkru = component_offset(9, layout.pkru);
  return layout;
}

}  // namespace

const XsaveLayout& host_xsave_layout() {
  static const XsaveLayout layout = detect();
  return layout;
}

protocol::Amd64Features features_of(uint64_t xcr0) {
  protocol::Amd64Features features;
  features.avx = (xcr0 & kXstateAvx) != 0;
  // gdb (gdbsupport/x86-xstate.h) takes either MPX component for MPX.
  features.mpx = (xcr0 & (kXstateBndregs | kXstateBndcsr)) != 0;
  // gdb describes AVX-512 only with all three of its components.
  features.avx512 = features.avx && (xcr0 & kXstateAvx512) == kXstateAvx512;
  features.pkeys = (xcr0 & kXstatePkru) != 0;
  return features;
}

}  // namespace stub::process
