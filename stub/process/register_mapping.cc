#include "stub/process/register_mapping.h"

#include <cstring>

namespace stub::process {
namespace {

using protocol::Amd64Reg;
using protocol::RegisterFile;

// Byte offsets inside the 64-bit FXSAVE image.
constexpr std::size_t kFcw = 0, kFsw = 2, kFtw = 4, kFop = 6;
constexpr std::size_t kFip = 8, kFdp = 16, kMxcsr = 24;
constexpr std::size_t kSt0 = 32, kXmm0 = 160;
constexpr std::size_t kStSlot = 16, kStBytes = 10, kXmmBytes = 16;

constexpr uint16_t kFcwInit = 0x037f;

constexpr unsigned reg_index(Amd64Reg reg) { return static_cast<unsigned>(reg); }

uint64_t load_le(const uint8_t* p, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

void store_le(uint8_t* p, std::size_t n, uint64_t v) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

struct GregSlot {
  Amd64Reg reg;
  unsigned long long user_regs_struct::*field;
};

constexpr GregSlot kGregSlots[] = {
    {Amd64Reg::rax, &user_regs_struct::rax},   {Amd64Reg::rbx, &user_regs_struct::rbx},
    {Amd64Reg::rcx, &user_regs_struct::rcx},   {Amd64Reg::rdx, &user_regs_struct::rdx},
    {Amd64Reg::rsi, &user_regs_struct::rsi},   {Amd64Reg::rdi, &user_regs_struct::rdi},
    {Amd64Reg::rbp, &user_regs_struct::rbp},   {Amd64Reg::rsp, &user_regs_struct::rsp},
    {Amd64Reg::r8, &user_regs_struct::r8},     {Amd64Reg::r9, &user_regs_struct::r9},
    {Amd64Reg::r10, &user_regs_struct::r10},   {Amd64Reg::r11, &user_regs_struct::r11},
    {Amd64Reg::r12, &user_regs_struct::r12},   {Amd64Reg::r13, &user_regs_struct::r13},
    {Amd64Reg::r14, &user_regs_struct::r14},   {Amd64Reg::r15, &user_regs_struct::r15},
    {Amd64Reg::rip, &user_regs_struct::rip},   {Amd64Reg::eflags, &user_regs_struct::eflags},
    {Amd64Reg::cs, &user_regs_struct::cs},     {Amd64Reg::ss, &user_regs_struct::ss},
    {Amd64Reg::ds, &user_regs_struct::ds},     {Amd64Reg::es, &user_regs_struct::es},
    {Amd64Reg::fs, &user_regs_struct::fs},     {Amd64Reg::gs, &user_regs_struct::gs},
    {Amd64Reg::orig_rax, &user_regs_struct::orig_rax},
    {Amd64Reg::fs_base, &user_regs_struct::fs_base},
    {Amd64Reg::gs_base, &user_regs_struct::gs_base},
};

// Tag of one 80-bit register from its contents, as the FNSTENV tag word
// would have it (the abridged FXSAVE tag only says empty / not empty).
unsigned classify_st(const uint8_t* raw) {
  unsigned exponent = (raw[8] | (raw[9] << 8)) & 0x7fff;
  uint64_t significand = load_le(raw, 8);
  bool integer_bit = (raw[7] & 0x80) != 0;
  if (exponent == 0x7fff) return 2;
  if (exponent == 0) return significand == 0 ? 1 : 2;
  return integer_bit ? 0 : 2;
}

// One piece of an XSAVE component: `count` registers from table index
// `first`, each `size` bytes at `stride` apart from `offset` in the component.
struct XsavePiece {
  uint64_t component;
  std::size_t XsaveLayout::*base;
  Amd64Reg first;
  unsigned count;
  std::size_t offset, stride, size;
};

// Hi16_ZMM holds zmm16..31 whole; gdb splits each into xmm, ymmh and zmmh.
constexpr XsavePiece kXsavePieces[] = {
    {kXstateAvx, &XsaveLayout::avx, Amd64Reg::ymm0h, 16, 0, 16, 16},
    {kXstateBndregs, &XsaveLayout::bndregs, Amd64Reg::bnd0raw, 4, 0, 16, 16},
    {kXstateBndcsr, &XsaveLayout::bndcsr, Amd64Reg::bndcfgu, 1, 0, 8, 8},
    {kXstateBndcsr, &XsaveLayout::bndcsr, Amd64Reg::bndstatus, 1, 8, 8, 8},
    {kXstateOpmask, &XsaveLayout::opmask, Amd64Reg::k0, 8, 0, 8, 8},
    {kXstateZmmHi256, &XsaveLayout::zmm_hi256, Amd64Reg::zmm0h, 16, 0, 32, 32},
    {kXstateHi16Zmm, &XsaveLayout::hi16_zmm, Amd64Reg::xmm16, 16, 0, 64, 16},
    {kXstateHi16Zmm, &XsaveLayout::hi16_zmm, Amd64Reg::ymm16h, 16, 16, 64, 16},
    {kXstateHi16Zmm, &XsaveLayout::hi16_zmm, static_cast<Amd64Reg>(reg_index(Amd64Reg::zmm0h) + 16), 16, 32, 64,
     32},
    {kXstatePkru, &XsaveLayout::pkru, Amd64Reg::pkru, 1, 0, 4, 4},
};

// Whether the piece is enabled and lies inside the buffer.
bool piece_present(const XsavePiece& piece, const XsaveLayout& layout, std::size_t size) {
  if (!(layout.xcr0 & piece.component)) return false;
  return layout.*piece.base + piece.offset + (piece.count - 1) * piece.stride + piece.size <= size;
}

}  // namespace

void xsave_to_file(const std::vector<uint8_t>& xsave, const XsaveLayout& layout, RegisterFile& regs) {
  if (xsave.size() < kFxsaveSize + kXsaveHeaderSize) return;
  const uint64_t bv = load_le(xsave.data() + kFxsaveSize, 8);
  for (const auto& piece : kXsavePieces) {
    if (!piece_present(piece, layout, xsave.size())) continue;
    for (unsigned i = 0; i < piece.count; ++i) {
      unsigned n = reg_index(piece.first) + i;
      if (bv & piece.component) {
        std::memcpy(regs.bytes(n), xsave.data() + layout.*piece.base + piece.offset + i * piece.stride, piece.size);
      } else {
        std::memset(regs.bytes(n), 0, piece.size);
      }
      regs.set_available(n, true);
    }
  }
}

void file_to_xsave(const RegisterFile& regs, const XsaveLayout& layout, std::vector<uint8_t>& xsave) {
  if (xsave.size() < kFxsaveSize + kXsaveHeaderSize) return;
  uint8_t* header = xsave.data() + kFxsaveSize;
  uint64_t bv = load_le(header, 8);
  for (const auto& piece : kXsavePieces) {
    if (!piece_present(piece, layout, xsave.size())) continue;
    for (unsigned i = 0; i < piece.count; ++i) {
      unsigned n = reg_index(piece.first) + i;
      if (!regs.available(n)) continue;
      uint8_t* slot = xsave.data() + layout.*piece.base + piece.offset + i * piece.stride;
      if (!(bv & piece.component)) {
        // Leaving the initial state: the component's other bytes are zeros,
        // not what the buffer happened to hold.
        for (const auto& other : kXsavePieces) {
          if (other.component != piece.component) continue;
          for (unsigned j = 0; j < other.count; ++j) {
            std::memset(xsave.data() + layout.*other.base + other.offset + j * other.stride, 0, other.size);
          }
        }
        bv |= piece.component;
      }
      std::memcpy(slot, regs.bytes(n), piece.size);
    }
  }
  store_le(header, 8, bv);
}

bool any_xsave_register_available(const RegisterFile& regs) {
  for (unsigned n = reg_index(Amd64Reg::st0); n <= reg_index(Amd64Reg::mxcsr); ++n) {
    if (regs.available(n)) return true;
  }
  for (unsigned n = reg_index(Amd64Reg::ymm0h); n < protocol::kAmd64RegisterCount; ++n) {
    if (regs.available(n)) return true;
  }
  return false;
}

void gregs_to_file(const user_regs_struct& gregs, RegisterFile& regs) {
  for (const auto& slot : kGregSlots) {
    unsigned n = reg_index(slot.reg);
    store_le(regs.bytes(n), protocol::amd64_register_size(n), gregs.*slot.field);
    regs.set_available(n, true);
  }
}

void file_to_gregs(const RegisterFile& regs, user_regs_struct& gregs) {
  for (const auto& slot : kGregSlots) {
    unsigned n = reg_index(slot.reg);
    if (!regs.available(n)) continue;
    std::size_t size = protocol::amd64_register_size(n);
    uint64_t value = load_le(regs.bytes(n), size);
    if (size < 8) {
      // Keep the upper bits the narrower wire register cannot express.
      uint64_t mask = (uint64_t{1} << (8 * size)) - 1;
      value = (gregs.*slot.field & ~mask) | (value & mask);
    }
    gregs.*slot.field = value;
  }
}

uint16_t expand_fxsave_tag(const uint8_t* fx) {
  uint8_t abridged = fx[kFtw];
  unsigned top = (load_le(fx + kFsw, 2) >> 11) & 7;
  uint16_t full = 0;
  for (unsigned phys = 0; phys < 8; ++phys) {
    unsigned tag = 3;
    if (abridged & (1u << phys)) {
      // FXSAVE stores registers in stack order: st(i) is physical (top+i)%8.
      unsigned st = (phys + 8 - top) % 8;
      tag = classify_st(fx + kSt0 + st * kStSlot);
    }
    full |= static_cast<uint16_t>(tag << (2 * phys));
  }
  return full;
}

uint8_t abridge_tag(uint16_t full_tag) {
  uint8_t abridged = 0;
  for (unsigned phys = 0; phys < 8; ++phys) {
    if (((full_tag >> (2 * phys)) & 3) != 3) abridged |= static_cast<uint8_t>(1u << phys);
  }
  return abridged;
}

void fxsave_to_file(const uint8_t* fx, RegisterFile& regs) {
  auto put = [&](Amd64Reg reg, uint64_t value) {
    unsigned n = reg_index(reg);
    store_le(regs.bytes(n), protocol::amd64_register_size(n), value);
    regs.set_available(n, true);
  };
  for (unsigned i = 0; i < 8; ++i) {
    unsigned n = reg_index(Amd64Reg::st0) + i;
    std::memcpy(regs.bytes(n), fx + kSt0 + i * kStSlot, kStBytes);
    regs.set_available(n, true);
  }
  for (unsigned i = 0; i < 16; ++i) {
    unsigned n = reg_index(Amd64Reg::xmm0) + i;
    std::memcpy(regs.bytes(n), fx + kXmm0 + i * kXmmBytes, kXmmBytes);
    regs.set_available(n, true);
  }
  put(Amd64Reg::fctrl, load_le(fx + kFcw, 2));
  put(Amd64Reg::fstat, load_le(fx + kFsw, 2));
  put(Amd64Reg::ftag, expand_fxsave_tag(fx));
  // 64-bit FXSAVE has a 64-bit FIP/FDP; like gdb's native amd64 code, the
  // "offset" registers get the low half and the "segment" registers the high.
  put(Amd64Reg::fioff, load_le(fx + kFip, 4));
  put(Amd64Reg::fiseg, load_le(fx + kFip + 4, 4));
  put(Amd64Reg::fooff, load_le(fx + kFdp, 4));
  put(Amd64Reg::foseg, load_le(fx + kFdp + 4, 4));
  put(Amd64Reg::fop, load_le(fx + kFop, 2) & 0x7ff);
  put(Amd64Reg::mxcsr, load_le(fx + kMxcsr, 4));
}

void file_to_fxsave(const RegisterFile& regs, uint8_t* fx) {
  auto has = [&](Amd64Reg reg) { return regs.available(reg_index(reg)); };
  auto get = [&](Amd64Reg reg) {
    unsigned n = reg_index(reg);
    return load_le(regs.bytes(n), protocol::amd64_register_size(n));
  };
  for (unsigned i = 0; i < 8; ++i) {
    unsigned n = reg_index(Amd64Reg::st0) + i;
    if (regs.available(n)) std::memcpy(fx + kSt0 + i * kStSlot, regs.bytes(n), kStBytes);
  }
  for (unsigned i = 0; i < 16; ++i) {
    unsigned n = reg_index(Amd64Reg::xmm0) + i;
    if (regs.available(n)) std::memcpy(fx + kXmm0 + i * kXmmBytes, regs.bytes(n), kXmmBytes);
  }
  if (has(Amd64Reg::fctrl)) store_le(fx + kFcw, 2, get(Amd64Reg::fctrl));
  if (has(Amd64Reg::fstat)) store_le(fx + kFsw, 2, get(Amd64Reg::fstat));
  if (has(Amd64Reg::ftag)) fx[kFtw] = abridge_tag(static_cast<uint16_t>(get(Amd64Reg::ftag)));
  if (has(Amd64Reg::fioff)) store_le(fx + kFip, 4, get(Amd64Reg::fioff));
  if (has(Amd64Reg::fiseg)) store_le(fx + kFip + 4, 4, get(Amd64Reg::fiseg));
  if (has(Amd64Reg::fooff)) store_le(fx + kFdp, 4, get(Amd64Reg::fooff));
  if (has(Amd64Reg::foseg)) store_le(fx + kFdp + 4, 4, get(Amd64Reg::foseg));
  if (has(Amd64Reg::fop)) {
    // Only 11 bits are architectural; keep whatever the upper bits held.
    uint64_t old = load_le(fx + kFop, 2);
    store_le(fx + kFop, 2, (get(Amd64Reg::fop) & 0x7ff) | (old & 0xf800));
  }
  if (has(Amd64Reg::mxcsr)) store_le(fx + kMxcsr, 4, get(Amd64Reg::mxcsr));
}

void normalize_xsave(std::vector<uint8_t>& xsave) {
  if (xsave.size() < kFxsaveSize + kXsaveHeaderSize) return;
  uint8_t* fx = xsave.data();
  uint8_t* header = fx + kFxsaveSize;
  uint64_t bv = load_le(header, 8);
  if (!(bv & kXstateX87)) {
    store_le(fx + kFcw, 2, kFcwInit);
    store_le(fx + kFsw, 2, 0);
    fx[kFtw] = 0;
    store_le(fx + kFop, 2, 0);
    store_le(fx + kFip, 8, 0);
    store_le(fx + kFdp, 8, 0);
    std::memset(fx + kSt0, 0, 8 * kStSlot);
  }
  if (!(bv & kXstateSse)) std::memset(fx + kXmm0, 0, 16 * kXmmBytes);
  store_le(header, 8, bv | kXstateX87 | kXstateSse);
}

}  // namespace stub::process
