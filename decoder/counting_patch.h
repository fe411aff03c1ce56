#pragma once
// A breakpoint with a hit count that the program's copy counts itself: the
// instruction at `target` is overwritten with a jmp to a trampoline in a
// page of the copy's own, which counts down a counter and runs an int3 on
// the last visit, else runs the overwritten instructions (relocated) and
// jumps back. A copy re-running a hot loop to its n-th visit of a pc then
// stops once instead of once per visit (stub/process/process_copy.h).
//
// The trampoline leaves the program's state as it was: it counts in rcx,
// swapped with a slot of its page (xchg, lea and jrcxz change no flag and
// touch no stack), and a relocated call pushes the original return
// address. On the last visit it puts rcx back before the int3, so the copy
// stops there with the program's registers, to be moved back to `target`.
//
// Only the bytes [target, target + covered) change; a jump into them other
// than at `target` would run the middle of the jmp, so the caller checks
// that the stretch it re-runs enters none of them (history_visits.h). The
// span's bytes past the jmp are int3s: should anything run them after all,
// the copy stops with a signal instead of running on.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/expected.h"

namespace decoder {

inline constexpr std::size_t kCountingPageSize = 4096;
// Code read at `target` for the patch: the longest span five bytes can
// need (four 15-byte instructions would be more than enough).
inline constexpr std::size_t kCountingCodeBytes = 32;

struct CountingPatch {
  uint64_t target = 0;
  std::vector<uint8_t> patch;     // written at `target`
  std::vector<uint8_t> original;  // what it replaces (patch.size() bytes)
  std::vector<uint8_t> page;      // the trampoline page, from `page_address`
  uint64_t page_address = 0;
  uint64_t counter_address = 0;   // 8 bytes, little-endian, in the page
  uint64_t stop_pc = 0;           // rip when the copy stops at the last visit
};

// The patch for stopping at the `hits`-th run of the instruction at
// `target` (the first when the copy stands there), with the trampoline in
// the page at `page_address` (page-aligned). `code` holds the bytes at
// `target` (up to kCountingCodeBytes). An error when the instructions there
// cannot be moved: a transfer other than jmp, jcc, call rel32 and ret in
// the span, an operand that the page is too far away to reach, a
// RIP-relative access to the span itself, or undecodable bytes.
btstub::Expected<CountingPatch> build_counting_patch(uint64_t target, const std::vector<uint8_t>& code,
                                                      uint64_t page_address, uint64_t hits);

}  // namespace decoder
