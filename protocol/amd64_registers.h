#pragma once
// The registers btstub knows for x86-64 Linux: one table of every register
// any CPU may have, in the order of gdb's amd64 features (core, sse, linux,
// segments, avx, mpx, avx512, pkeys). A register file holds them all; which ones
// a target has depends on the CPU and the kernel (XCR0), so the numbers on
// the wire (`g`/`G`/`p`/`P`, target.xml) come from a RegisterLayout: the
// registers of the features present, numbered in table order. The first
// 60 (core to segments) are always there, so their wire number is their
// table index.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  ymm0h = 60,                      // avx: ymm0h..ymm15h: 60..75 (bits 128-255)
  bnd0raw = 76,                    // mpx: bnd0raw..bnd3raw: 76..79
  bndcfgu = 80, bndstatus = 81,
  xmm16 = 82,                      // avx512: xmm16..xmm31: 82..97
  ymm16h = 98,                     //   ymm16h..ymm31h: 98..113
  k0 = 114,                        //   k0..k7: 114..121
  zmm0h = 122,                     //   zmm0h..zmm31h: 122..153 (bits 256-511)
  pkru = 154,                      // pkeys
};

inline constexpr std::size_t kAmd64RegisterCount = 155;
// Registers every amd64 target has: core, sse, linux and segments.
inline constexpr std::size_t kAmd64BaseRegisterCount = 60;

// The optional register sets, each a gdb feature (org.gnu.gdb.i386.NAME).
// gdb builds $ymm from xmm + ymmh only with avx, and $zmm, $k with avx512.
struct Amd64Features {
  bool avx = false;     // XCR0 bit 2
  bool mpx = false;     // XCR0 bit 3 or 4 (BNDREGS, BNDCSR), as gdb decides
  bool avx512 = false;  // XCR0 bits 5-7 (opmask, ZMM_Hi256, Hi16_ZMM), all three
  bool pkeys = false;   // XCR0 bit 9
  bool operator==(const Amd64Features&) const = default;
};

// The registers a target with `features` has, as the client numbers them:
// wire number n is table register index(n).
class RegisterLayout {
 public:
  explicit RegisterLayout(const Amd64Features& features);
  const Amd64Features& features() const { return features_; }
  std::size_t count() const { return table_index_.size(); }
  unsigned index(unsigned wire) const { return table_index_[wire]; }
  // The wire number of table register `index`, if the target has it.
  std::optional<unsigned> wire(unsigned index) const;
  // Bytes of a `g` packet: the sizes of count() registers.
  std::size_t buffer_size() const;

 private:
  Amd64Features features_;
  std::vector<unsigned> table_index_;
};

extern const std::array<RegisterInfo, kAmd64RegisterCount> kAmd64Registers;

// Which feature (org.gnu.gdb.i386.NAME) register `regnum` of the table
// belongs to is kAmd64Registers[regnum].feature; whether `features` has it:
bool has_register(const Amd64Features& features, unsigned regnum);

// Byte offset of register `regnum` inside a register file (all of the table).
std::size_t amd64_register_offset(unsigned regnum);
// Size in bytes of register `regnum`.
std::size_t amd64_register_size(unsigned regnum);
// Total size of a register file in bytes (the table's; checked there).
inline constexpr std::size_t kAmd64RegisterBufferSize = 2500;
std::size_t amd64_register_buffer_size();
// Number of a register by name, if it exists.
std::optional<unsigned> amd64_register_number(std::string_view name);

// target.xml for qXfer:features:read:target.xml (a single self-contained
// document: core, sse, linux and segments features, then those of `layout`,
// amd64 architecture, GNU/Linux OS ABI).
std::string amd64_target_xml(const RegisterLayout& layout);

}  // namespace protocol
