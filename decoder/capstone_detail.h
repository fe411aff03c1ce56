#pragma once
// A Capstone x86-64 decoder with instruction detail on, and one instruction
// to decode into: what the code that rewrites instructions (counting_patch,
// block_translator) decodes with, closed when it goes.
#include <capstone/capstone.h>

#include <cstdint>
#include <optional>

#include "protocol/expected.h"

namespace decoder {

class CapstoneDetail {
 public:
  // A decoder, or why there is none (and `cs` left closed).
  static btstub::Expected<void> open(CapstoneDetail& cs) {
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs.handle) != CS_ERR_OK ||
        cs_option(cs.handle, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK || (cs.insn = cs_malloc(cs.handle)) == nullptr) {
      if (cs.handle != 0) cs_close(&cs.handle);
      cs.handle = 0;
      return btstub::make_error(btstub::ErrorCode::Internal, "capstone: cannot open a decoder");
    }
    return {};
  }
  CapstoneDetail() = default;
  CapstoneDetail(const CapstoneDetail&) = delete;
  CapstoneDetail& operator=(const CapstoneDetail&) = delete;
  ~CapstoneDetail() {
    if (insn != nullptr) cs_free(insn, 1);
    if (handle != 0) cs_close(&handle);
  }

  csh handle = 0;
  cs_insn* insn = nullptr;
};

inline bool in_group(csh handle, const cs_insn& insn, uint8_t group) { return cs_insn_group(handle, &insn, group); }

// Where the 4-byte displacement of `insn`'s RIP-relative operand `mem` lies
// in its bytes, or -1 when it cannot be found for sure. A RIP-relative
// operand is always ModRM mod=00 r/m=101 followed by a disp32, but
// Capstone 4.0.2 says disp_size 2 when a 0x66 prefix is present (movdqa,
// pand, pshufd: what gcc's vectorised code reads constants with), so
// its offset is checked against the bytes instead of trusted.
inline int rip_disp_offset(const cs_insn& insn, const cs_x86_op& mem) {
  const auto disp = static_cast<uint32_t>(static_cast<int32_t>(mem.mem.disp));
  auto holds_disp = [&](int at) {
    if (at < 1 || at + 4 > insn.size || (insn.bytes[at - 1] & 0xc7) != 0x05) return false;
    const uint32_t value = static_cast<uint32_t>(insn.bytes[at]) | static_cast<uint32_t>(insn.bytes[at + 1]) << 8 |
                           static_cast<uint32_t>(insn.bytes[at + 2]) << 16 |
                           static_cast<uint32_t>(insn.bytes[at + 3]) << 24;
    return value == disp;
  };
  const int said = insn.detail->x86.encoding.disp_offset;
  return said != 0 && holds_disp(said) ? said : -1;
}

// The rel32 from the end of an instruction at `next` to `to`, when it fits.
inline std::optional<int32_t> rel32(uint64_t next, uint64_t to) {
  const int64_t delta = static_cast<int64_t>(to - next);
  if (delta < INT32_MIN || delta > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(delta);
}

}  // namespace decoder
