#pragma once
// The register layout btstub serves for x86-64 Linux. Register numbers in
// `g`/`G`/`p`/`P` and in stop replies are indices into this table, because the
// target description (target.xml) is generated from it in the same order.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace protocol {

struct RegisterInfo {
  std::string_view name;
  unsigned bitsize;
  std::string_view type;     // gdb target-description type name
  std::string_view feature;  // org.gnu.gdb.i386.<feature>
};

// Index constants for the registers the stub and replay code touch by name.
enum class Amd64Reg : unsigned {
  rax = 0, rbx, rcx, rdx, rsi, rdi, rbp, rsp,
  r8, r9, r10, r11, r12, r13, r14, r15,
  rip = 16, eflags = 17,
  cs = 18, ss, ds, es, fs, gs,
  st0 = 24,                        // st0..st7: 24..31 (80-bit)
  fctrl = 32, fstat, ftag, fiseg, fioff, foseg, fooff, fop,  // 32..39
  xmm0 = 40,                       // xmm0..xmm15: 40..55
  mxcsr = 56,
  orig_rax = 57,
  fs_base = 58, gs_base = 59,
};

inline constexpr std::size_t kAmd64RegisterCount = 60;

extern const std::array<RegisterInfo, kAmd64RegisterCount> kAmd64Registers;

// Byte offset of register `regnum` inside the `g` packet buffer.
std::size_t amd64_register_offset(unsigned regnum);
// Size in bytes of register `regnum`.
std::size_t amd64_register_size(unsigned regnum);
// Total size of the `g` packet buffer in bytes.
std::size_t amd64_register_buffer_size();
// Number of a register by name, if it exists.
std::optional<unsigned> amd64_register_number(std::string_view name);

// target.xml for qXfer:features:read:target.xml (a single self-contained
// document: core, sse, linux and segments features, amd64 architecture,
// GNU/Linux OS ABI).
std::string amd64_target_xml();

}  // namespace protocol
