#pragma once
// Conversion between the kernel's register buffers (user_regs_struct and the
// FXSAVE/XSAVE area of PTRACE_GETREGSET) and protocol::RegisterFile. Pure
// functions on buffers, so they are unit-testable without a process.
#include <sys/user.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "decoder/registers.h"
#include "protocol/amd64_registers.h"
#include "protocol/register_file.h"
#include "stub/process/xsave_layout.h"

namespace stub::process {

inline constexpr std::size_t kFxsaveSize = 512;
// XSAVE header (xstate_bv) follows the legacy FXSAVE area.
inline constexpr std::size_t kXsaveHeaderSize = 64;

void gregs_to_file(const user_regs_struct& gregs, protocol::RegisterFile& regs);
// Only registers marked available in `regs` are copied; the rest of `gregs`
// keeps its current value.
void file_to_gregs(const protocol::RegisterFile& regs, user_regs_struct& gregs);

// `fx` points at a 512-byte FXSAVE (64-bit format) area.
void fxsave_to_file(const uint8_t* fx, protocol::RegisterFile& regs);
void file_to_fxsave(const protocol::RegisterFile& regs, uint8_t* fx);

// The components of an XSAVE buffer (`xsave`, standard format, header
// included) beyond FXSAVE that `layout` enables and the buffer is long
// enough for: ymm upper halves, MPX bound registers, AVX-512 (xmm16-31, ymm16h-31h, k0-7,
// zmm0h-31h), pkru. A component whose XSTATE_BV bit is clear is in its
// initial state: zeros, whatever bytes the buffer holds there.
void xsave_to_file(const std::vector<uint8_t>& xsave, const XsaveLayout& layout, protocol::RegisterFile& regs);
// Writes the available ones back, and sets the XSTATE_BV bit of each
// component written (the kernel ignores a component whose bit is clear).
void file_to_xsave(const protocol::RegisterFile& regs, const XsaveLayout& layout, std::vector<uint8_t>& xsave);
// Whether `regs` holds any register of the FXSAVE/XSAVE area.
bool any_xsave_register_available(const protocol::RegisterFile& regs);

// gdb's 16-bit tag word (2 bits per physical register: 0 valid, 1 zero,
// 2 special, 3 empty) from the FXSAVE area's abridged 8-bit tag.
uint16_t expand_fxsave_tag(const uint8_t* fx);
// The abridged tag: bit i set when physical register i is not empty.
uint8_t abridge_tag(uint16_t full_tag);

// An XSAVE buffer whose XSTATE_BV says x87 or SSE is in its initial state
// may hold stale bytes there; replace them with the initial values and mark
// both components present, so the buffer can be read and written back as a
// plain FXSAVE image. No-op for buffers without an XSAVE header.
void normalize_xsave(std::vector<uint8_t>& xsave);

// The registers decoder/ evaluates instructions with (branch targets,
// memory operands), from a register file.
inline decoder::RegisterArray register_view(const protocol::RegisterFile& regs) {
  using protocol::Amd64Reg;
  decoder::RegisterArray out;
  // decoder::Register's first sixteen follow the same order as Amd64Reg's.
  for (unsigned i = 0; i < 16; ++i) {
    out.set(static_cast<decoder::Register>(i), regs.get_u64(static_cast<Amd64Reg>(i)));
  }
  out.set(decoder::Register::Rip, regs.get_u64(Amd64Reg::rip));
  out.set(decoder::Register::Rflags, regs.get_u64(Amd64Reg::eflags));
  out.set(decoder::Register::FsBase, regs.get_u64(Amd64Reg::fs_base));
  out.set(decoder::Register::GsBase, regs.get_u64(Amd64Reg::gs_base));
  return out;
}

}  // namespace stub::process
