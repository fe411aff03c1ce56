#pragma once
// A Capstone x86-64 decoder with instruction detail on, and one instruction
// to decode into: what the code that rewrites instructions (counting_patch,
// block_translator) decodes with, closed when it goes.
#include <capstone/capstone.h>

#include <cstdint>

#include "protocol/expected.h"

namespace decoder {

class CapstoneDetail {
 public:
  // A decoder, or why there is none.
  static btstub::Expected<void> open(CapstoneDetail& cs) {
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs.handle) != CS_ERR_OK ||
        cs_option(cs.handle, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK || (cs.insn = cs_malloc(cs.handle)) == nullptr) {
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

}  // namespace decoder
