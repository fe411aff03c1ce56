// The amd64 register table and the layouts (wire numberings) drawn from it.
#include "protocol/amd64_registers.h"

namespace protocol {
namespace {

constexpr RegisterInfo gpr(std::string_view name, std::string_view type = "int64") {
  return {name, 64, type, "core"};
}
constexpr RegisterInfo core32(std::string_view name, std::string_view type = "int32") {
  return {name, 32, type, "core"};
}
constexpr RegisterInfo st(std::string_view name) { return {name, 80, "i387_ext", "core"}; }
constexpr RegisterInfo xmm(std::string_view name) { return {name, 128, "vec128", "sse"}; }
constexpr RegisterInfo ymmh(std::string_view name) { return {name, 128, "uint128", "avx"}; }
constexpr RegisterInfo xmm512(std::string_view name) { return {name, 128, "vec128", "avx512"}; }
constexpr RegisterInfo ymmh512(std::string_view name) { return {name, 128, "uint128", "avx512"}; }
constexpr RegisterInfo zmmh(std::string_view name) { return {name, 256, "v2ui128", "avx512"}; }

constexpr std::array<std::size_t, kAmd64RegisterCount + 1> compute_offsets() {
  std::array<std::size_t, kAmd64RegisterCount + 1> offsets{};
  for (std::size_t i = 0; i < kAmd64RegisterCount; ++i)
    offsets[i + 1] = offsets[i] + kAmd64Registers[i].bitsize / 8;
  return offsets;
}

}  // namespace

constexpr std::array<RegisterInfo, kAmd64RegisterCount> kAmd64Registers = {{
    gpr("rax"), gpr("rbx"), gpr("rcx"), gpr("rdx"), gpr("rsi"), gpr("rdi"),
    gpr("rbp", "data_ptr"), gpr("rsp", "data_ptr"),
    gpr("r8"), gpr("r9"), gpr("r10"), gpr("r11"), gpr("r12"), gpr("r13"), gpr("r14"), gpr("r15"),
    gpr("rip", "code_ptr"), core32("eflags", "i386_eflags"),
    core32("cs"), core32("ss"), core32("ds"), core32("es"), core32("fs"), core32("gs"),
    st("st0"), st("st1"), st("st2"), st("st3"), st("st4"), st("st5"), st("st6"), st("st7"),
    core32("fctrl", "int"), core32("fstat", "int"), core32("ftag", "int"), core32("fiseg", "int"),
    core32("fioff", "int"), core32("foseg", "int"), core32("fooff", "int"), core32("fop", "int"),
    xmm("xmm0"), xmm("xmm1"), xmm("xmm2"), xmm("xmm3"), xmm("xmm4"), xmm("xmm5"), xmm("xmm6"),
    xmm("xmm7"), xmm("xmm8"), xmm("xmm9"), xmm("xmm10"), xmm("xmm11"), xmm("xmm12"), xmm("xmm13"),
    xmm("xmm14"), xmm("xmm15"),
    {"mxcsr", 32, "i386_mxcsr", "sse"},
    {"orig_rax", 64, "int", "linux"},
    {"fs_base", 64, "int", "segments"},
    {"gs_base", 64, "int", "segments"},
    // avx: the upper halves of ymm0..15.
    ymmh("ymm0h"), ymmh("ymm1h"), ymmh("ymm2h"), ymmh("ymm3h"), ymmh("ymm4h"), ymmh("ymm5h"),
    ymmh("ymm6h"), ymmh("ymm7h"), ymmh("ymm8h"), ymmh("ymm9h"), ymmh("ymm10h"), ymmh("ymm11h"),
    ymmh("ymm12h"), ymmh("ymm13h"), ymmh("ymm14h"), ymmh("ymm15h"),
    // mpx: bound registers and their configuration and status.
    {"bnd0raw", 128, "br128", "mpx"}, {"bnd1raw", 128, "br128", "mpx"},
    {"bnd2raw", 128, "br128", "mpx"}, {"bnd3raw", 128, "br128", "mpx"},
    {"bndcfgu", 64, "cfgu", "mpx"}, {"bndstatus", 64, "status", "mpx"},
    // avx512: xmm16..31, the upper halves of ymm16..31, k0..7, the upper
    // halves of zmm0..31 (gdb's order in 64bit-avx512.xml).
    xmm512("xmm16"), xmm512("xmm17"), xmm512("xmm18"), xmm512("xmm19"), xmm512("xmm20"),
    xmm512("xmm21"), xmm512("xmm22"), xmm512("xmm23"), xmm512("xmm24"), xmm512("xmm25"),
    xmm512("xmm26"), xmm512("xmm27"), xmm512("xmm28"), xmm512("xmm29"), xmm512("xmm30"),
    xmm512("xmm31"),
    ymmh512("ymm16h"), ymmh512("ymm17h"), ymmh512("ymm18h"), ymmh512("ymm19h"), ymmh512("ymm20h"),
    ymmh512("ymm21h"), ymmh512("ymm22h"), ymmh512("ymm23h"), ymmh512("ymm24h"), ymmh512("ymm25h"),
    ymmh512("ymm26h"), ymmh512("ymm27h"), ymmh512("ymm28h"), ymmh512("ymm29h"), ymmh512("ymm30h"),
    ymmh512("ymm31h"),
    {"k0", 64, "uint64", "avx512"}, {"k1", 64, "uint64", "avx512"}, {"k2", 64, "uint64", "avx512"},
    {"k3", 64, "uint64", "avx512"}, {"k4", 64, "uint64", "avx512"}, {"k5", 64, "uint64", "avx512"},
    {"k6", 64, "uint64", "avx512"}, {"k7", 64, "uint64", "avx512"},
    zmmh("zmm0h"), zmmh("zmm1h"), zmmh("zmm2h"), zmmh("zmm3h"), zmmh("zmm4h"), zmmh("zmm5h"),
    zmmh("zmm6h"), zmmh("zmm7h"), zmmh("zmm8h"), zmmh("zmm9h"), zmmh("zmm10h"), zmmh("zmm11h"),
    zmmh("zmm12h"), zmmh("zmm13h"), zmmh("zmm14h"), zmmh("zmm15h"), zmmh("zmm16h"), zmmh("zmm17h"),
    zmmh("zmm18h"), zmmh("zmm19h"), zmmh("zmm20h"), zmmh("zmm21h"), zmmh("zmm22h"), zmmh("zmm23h"),
    zmmh("zmm24h"), zmmh("zmm25h"), zmmh("zmm26h"), zmmh("zmm27h"), zmmh("zmm28h"), zmmh("zmm29h"),
    zmmh("zmm30h"), zmmh("zmm31h"),
    {"pkru", 32, "uint32", "pkeys"},
}};

namespace {
constexpr auto kOffsets = compute_offsets();
}  // namespace

bool has_register(const Amd64Features& features, unsigned regnum) {
  if (regnum >= kAmd64RegisterCount) return false;
  std::string_view feature = kAmd64Registers[regnum].feature;
  if (feature == "avx") return features.avx;
  if (feature == "mpx") return features.mpx;
  if (feature == "avx512") return features.avx512;
  if (feature == "pkeys") return features.pkeys;
  return true;
}

RegisterLayout::RegisterLayout(const Amd64Features& features) : features_(features) {
  for (unsigned i = 0; i < kAmd64RegisterCount; ++i)
    if (has_register(features, i)) table_index_.push_back(i);
}

std::optional<unsigned> RegisterLayout::wire(unsigned index) const {
  for (unsigned n = 0; n < table_index_.size(); ++n)
    if (table_index_[n] == index) return n;
  return std::nullopt;
}

std::size_t RegisterLayout::buffer_size() const {
  std::size_t size = 0;
  for (unsigned index : table_index_) size += amd64_register_size(index);
  return size;
}

std::size_t amd64_register_offset(unsigned regnum) {
  return regnum < kAmd64RegisterCount ? kOffsets[regnum] : kOffsets[kAmd64RegisterCount];
}

std::size_t amd64_register_size(unsigned regnum) {
  return regnum < kAmd64RegisterCount ? kAmd64Registers[regnum].bitsize / 8 : 0;
}

static_assert(kOffsets[kAmd64RegisterCount] == kAmd64RegisterBufferSize);
std::size_t amd64_register_buffer_size() { return kAmd64RegisterBufferSize; }

std::optional<unsigned> amd64_register_number(std::string_view name) {
  for (unsigned i = 0; i < kAmd64RegisterCount; ++i)
    if (kAmd64Registers[i].name == name) return i;
  return std::nullopt;
}

}  // namespace protocol
