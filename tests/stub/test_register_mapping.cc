// register_mapping on synthetic kernel buffers (no process).
#include <catch2/catch.hpp>
#include <cstring>

#include "stub/process/register_mapping.h"

namespace test_register_mapping {  // this file's own names, apart in a unity build

using protocol::Amd64Reg;

namespace {

void put_st(uint8_t* fx, int st, uint64_t significand, uint16_t sign_exponent) {
  std::memcpy(fx + 32 + st * 16, &significand, 8);
  std::memcpy(fx + 32 + st * 16 + 8, &sign_exponent, 2);
}

unsigned idx(Amd64Reg r) { return static_cast<unsigned>(r); }

}  // namespace

TEST_CASE("the abridged FXSAVE tag expands by register contents and stack top") {
  uint8_t fx[512] = {};
  SECTION("all empty") { CHECK(stub::process::expand_fxsave_tag(fx) == 0xffff); }
  SECTION("top = 5: st(i) is physical register (5+i)%8") {
    uint16_t fsw = 5 << 11;
    std::memcpy(fx + 2, &fsw, 2);
    fx[4] = (1 << 5) | (1 << 6) | (1 << 7) | (1 << 0) | (1 << 1);
    put_st(fx, 0, 0x8000000000000000, 0x3fff);  // phys 5: 1.0, valid
    put_st(fx, 1, 0, 0);                        // phys 6: zero
    put_st(fx, 2, 0x8000000000000000, 0x7fff);  // phys 7: infinity, special
    put_st(fx, 3, 1, 0);                        // phys 0: denormal, special
    put_st(fx, 4, 0x4000000000000000, 0x3fff);  // phys 1: unnormal, special
    uint16_t expected = (0u << 10) | (1u << 12) | (2u << 14) | (2u << 0) | (2u << 2) |
                        (3u << 4) | (3u << 6) | (3u << 8);
    CHECK(stub::process::expand_fxsave_tag(fx) == expected);
    CHECK(stub::process::abridge_tag(expected) == fx[4]);
  }
}

TEST_CASE("FXSAVE fields map to gdb's i387 registers and back") {
  uint8_t fx[512] = {};
  uint16_t fcw = 0x27f, fsw = 0x3800, fop = 0xf9d2;
  uint64_t fip = 0x00007fff12345678, fdp = 0x0000555500abcdef;
  uint32_t mxcsr = 0x1fa0;
  std::memcpy(fx + 0, &fcw, 2);
  std::memcpy(fx + 2, &fsw, 2);
  std::memcpy(fx + 6, &fop, 2);
  std::memcpy(fx + 8, &fip, 8);
  std::memcpy(fx + 16, &fdp, 8);
  std::memcpy(fx + 24, &mxcsr, 4);
  for (int i = 0; i < 16; ++i) fx[160 + 15 * 16 + i] = static_cast<uint8_t>(i + 1);  // xmm15

  protocol::RegisterFile regs;
  stub::process::fxsave_to_file(fx, regs);
  CHECK(regs.get_u64(Amd64Reg::fctrl) == 0x27f);
  CHECK(regs.get_u64(Amd64Reg::fstat) == 0x3800);
  CHECK(regs.get_u64(Amd64Reg::fop) == (0xf9d2 & 0x7ff));
  CHECK(regs.get_u64(Amd64Reg::fioff) == 0x12345678);
  CHECK(regs.get_u64(Amd64Reg::fiseg) == 0x7fff);
  CHECK(regs.get_u64(Amd64Reg::fooff) == 0x00abcdef);
  CHECK(regs.get_u64(Amd64Reg::foseg) == 0x5555);
  CHECK(regs.get_u64(Amd64Reg::mxcsr) == 0x1fa0);
  CHECK(regs.bytes(idx(Amd64Reg::xmm0) + 15)[15] == 16);

  uint8_t out[512];
  std::memcpy(out, fx, 512);
  out[0] = 0;  // must be rewritten from the file
  stub::process::file_to_fxsave(regs, out);
  CHECK(std::memcmp(out, fx, 512) == 0);  // including fop's upper bits
}

TEST_CASE("general registers keep bits the wire format cannot carry") {
  user_regs_struct g{};
  g.rax = 0x1234;
  g.eflags = 0xffffffff00000246ull;
  g.fs_base = 0x7ffff7d8a740;
  protocol::RegisterFile regs;
  stub::process::gregs_to_file(g, regs);
  CHECK(regs.get_u64(Amd64Reg::eflags) == 0x246);
  CHECK(regs.get_u64(Amd64Reg::fs_base) == 0x7ffff7d8a740);
  regs.set_u64(Amd64Reg::eflags, 0x202);
  regs.set_available(idx(Amd64Reg::rax), false);
  g.rax = 0x9999;
  stub::process::file_to_gregs(regs, g);
  CHECK(g.eflags == 0xffffffff00000202ull);
  CHECK(g.rax == 0x9999);  // unavailable: left alone
}

TEST_CASE("an XSAVE buffer in initial state is normalized") {
  std::vector<uint8_t> xsave(576 + 256, 0xee);
  uint64_t bv = 0x4;  // AVX only: x87 and SSE in initial state
  std::memcpy(xsave.data() + 512, &bv, 8);
  stub::process::normalize_xsave(xsave);
  protocol::RegisterFile regs;
  stub::process::fxsave_to_file(xsave.data(), regs);
  CHECK(regs.get_u64(Amd64Reg::fctrl) == 0x37f);
  CHECK(regs.get_u64(Amd64Reg::ftag) == 0xffff);
  CHECK(regs.bytes(idx(Amd64Reg::xmm0))[0] == 0);
  std::memcpy(&bv, xsave.data() + 512, 8);
  CHECK(bv == 0x7);
  CHECK(xsave[600] == 0xee);  // other components untouched
}

namespace {

// An XSAVE buffer of Intel's standard layout with `bv` in its header.
std::vector<uint8_t> xsave_buffer(std::size_t size, uint64_t bv) {
  std::vector<uint8_t> xs(size, 0);
  std::memcpy(xs.data() + 512, &bv, 8);
  return xs;
}

uint64_t header_bv(const std::vector<uint8_t>& xs) {
  uint64_t bv = 0;
  std::memcpy(&bv, xs.data() + 512, 8);
  return bv;
}

using stub::process::XsaveLayout;

XsaveLayout layout_with(uint64_t xcr0) {
  XsaveLayout layout;
  layout.xcr0 = xcr0;
  return layout;
}

}  // namespace

TEST_CASE("XSAVE components map to ymm, AVX-512 and pkru registers and back") {
  using namespace stub::process;
  const XsaveLayout layout = layout_with(0x2e7);  // x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM PKRU
  const uint64_t bv = 0x2e7;
  auto xs = xsave_buffer(2696, bv);
  for (int i = 0; i < 16; ++i) xs[576 + 15 * 16 + i] = static_cast<uint8_t>(0xa0 + i);  // ymm15 high
  const uint64_t k1 = 0x00000000deadbeefull;
  std::memcpy(xs.data() + 1088 + 8, &k1, 8);
  for (int i = 0; i < 32; ++i) xs[1152 + i] = static_cast<uint8_t>(0x10 + i);  // zmm0 bits 256-511
  for (int i = 0; i < 64; ++i) xs[1664 + 64 + i] = static_cast<uint8_t>(i);   // zmm17 whole
  const uint32_t pkru = 0x55555554;
  std::memcpy(xs.data() + 2688, &pkru, 4);

  protocol::RegisterFile regs;
  xsave_to_file(xs, layout, regs);
  const unsigned ymm15h = idx(Amd64Reg::ymm0h) + 15;
  REQUIRE(regs.available(ymm15h));
  CHECK(regs.bytes(ymm15h)[0] == 0xa0);
  CHECK(regs.bytes(ymm15h)[15] == 0xaf);
  CHECK(regs.get_u64(static_cast<Amd64Reg>(idx(Amd64Reg::k0) + 1)) == k1);
  CHECK(regs.bytes(idx(Amd64Reg::zmm0h))[31] == 0x10 + 31);
  // zmm17 splits into xmm17, ymm17h and zmm17h.
  CHECK(regs.bytes(idx(Amd64Reg::xmm16) + 1)[0] == 0);
  CHECK(regs.bytes(idx(Amd64Reg::xmm16) + 1)[15] == 15);
  CHECK(regs.bytes(idx(Amd64Reg::ymm16h) + 1)[0] == 16);
  CHECK(regs.bytes(idx(Amd64Reg::zmm0h) + 17)[0] == 32);
  CHECK(regs.bytes(idx(Amd64Reg::zmm0h) + 17)[31] == 63);
  CHECK(regs.get_u64(Amd64Reg::pkru) == pkru);
  // All but MPX's, which this XCR0 leaves out.
  for (unsigned n = idx(Amd64Reg::ymm0h); n < protocol::kAmd64RegisterCount; ++n) {
    CHECK(regs.available(n) == (n < idx(Amd64Reg::bnd0raw) || n > idx(Amd64Reg::bndstatus)));
  }

  // Back: an unchanged file writes the same bytes; a change lands in place.
  auto out = xs;
  file_to_xsave(regs, layout, out);
  CHECK(out == xs);
  regs.bytes(idx(Amd64Reg::zmm0h) + 17)[0] = 0x77;
  regs.bytes(ymm15h)[15] = 0x42;
  file_to_xsave(regs, layout, out);
  CHECK(out[1664 + 64 + 32] == 0x77);
  CHECK(out[576 + 15 * 16 + 15] == 0x42);
}

TEST_CASE("XSAVE components in their initial state read as zeros and are set when written") {
  using namespace stub::process;
  const XsaveLayout layout = layout_with(0x2e7);
  auto xs = xsave_buffer(2696, 0x3);  // AVX and the rest in the initial state
  std::memset(xs.data() + 576, 0xcc, 256);  // stale bytes the header says to ignore
  protocol::RegisterFile regs;
  xsave_to_file(xs, layout, regs);
  REQUIRE(regs.available(idx(Amd64Reg::ymm0h)));
  CHECK(regs.bytes(idx(Amd64Reg::ymm0h))[0] == 0);
  regs.set_all_available(false);
  regs.bytes(idx(Amd64Reg::ymm0h) + 3)[4] = 0x99;
  regs.set_available(idx(Amd64Reg::ymm0h) + 3, true);
  file_to_xsave(regs, layout, xs);
  CHECK(header_bv(xs) == (0x3 | kXstateAvx));
  CHECK(xs[576 + 3 * 16 + 4] == 0x99);
  CHECK(xs[576] == 0);  // the stale bytes of the other registers are cleared
}

TEST_CASE("XSAVE mapping follows XCR0 and the buffer's size") {
  using namespace stub::process;
  // An AVX2 machine without AVX-512 (AMD puts PKRU at 0x980 there).
  XsaveLayout amd = layout_with(0x207);
  amd.pkru = 0x980;
  auto xs = xsave_buffer(0x988, 0x207);
  const uint32_t pkru = 0x5554;
  std::memcpy(xs.data() + 0x980, &pkru, 4);
  protocol::RegisterFile regs;
  xsave_to_file(xs, amd, regs);
  CHECK(regs.available(idx(Amd64Reg::ymm0h) + 15));
  CHECK_FALSE(regs.available(idx(Amd64Reg::k0)));
  CHECK_FALSE(regs.available(idx(Amd64Reg::xmm16)));
  CHECK(regs.get_u64(Amd64Reg::pkru) == pkru);

  // An FXSAVE-only buffer (NT_PRFPREG) or a short one maps nothing more.
  protocol::RegisterFile none;
  xsave_to_file(std::vector<uint8_t>(512, 0), layout_with(0x2e7), none);
  auto short_buffer = xsave_buffer(832, 0x7);  // header + AVX only
  xsave_to_file(short_buffer, layout_with(0x2e7), none);
  CHECK(none.available(idx(Amd64Reg::ymm0h)));
  CHECK_FALSE(none.available(idx(Amd64Reg::k0)));
  CHECK_FALSE(none.available(idx(Amd64Reg::pkru)));

  // MPX (a Skylake server): bnd0-3 and the two words after them.
  auto mpx = xsave_buffer(1040, 0x1f);
  const uint64_t bnd3_upper = 0xffffffffffff0000ull, cfgu = 0x7ffff000ull | 1, status = 0x2;
  std::memcpy(mpx.data() + 960 + 3 * 16 + 8, &bnd3_upper, 8);
  std::memcpy(mpx.data() + 1024, &cfgu, 8);
  std::memcpy(mpx.data() + 1024 + 8, &status, 8);
  protocol::RegisterFile bounds;
  xsave_to_file(mpx, layout_with(0x1f), bounds);
  REQUIRE(bounds.available(idx(Amd64Reg::bnd0raw) + 3));
  uint64_t upper = 0;
  std::memcpy(&upper, bounds.bytes(idx(Amd64Reg::bnd0raw) + 3) + 8, 8);
  CHECK(upper == bnd3_upper);
  CHECK(bounds.get_u64(Amd64Reg::bndcfgu) == cfgu);
  CHECK(bounds.get_u64(Amd64Reg::bndstatus) == status);
  CHECK(features_of(0x1f) == protocol::Amd64Features{.avx = true, .mpx = true});
  CHECK(features_of(0x0b) == protocol::Amd64Features{.mpx = true});

  CHECK(features_of(0x207) == protocol::Amd64Features{.avx = true, .pkeys = true});
  CHECK(features_of(0x602e7) == protocol::Amd64Features{.avx = true, .avx512 = true, .pkeys = true});
  CHECK(features_of(0x3) == protocol::Amd64Features{});
  CHECK(features_of(0x67) == protocol::Amd64Features{.avx = true});  // opmask alone is no AVX-512
}

}  // namespace test_register_mapping
