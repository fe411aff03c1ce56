// The amd64 register table and the target description generated from it.
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
}};

namespace {
constexpr auto kOffsets = compute_offsets();
}  // namespace

std::size_t amd64_register_offset(unsigned regnum) {
  return regnum < kAmd64RegisterCount ? kOffsets[regnum] : kOffsets[kAmd64RegisterCount];
}

std::size_t amd64_register_size(unsigned regnum) {
  return regnum < kAmd64RegisterCount ? kAmd64Registers[regnum].bitsize / 8 : 0;
}

std::size_t amd64_register_buffer_size() { return kOffsets[kAmd64RegisterCount]; }

std::optional<unsigned> amd64_register_number(std::string_view name) {
  for (unsigned i = 0; i < kAmd64RegisterCount; ++i)
    if (kAmd64Registers[i].name == name) return i;
  return std::nullopt;
}

}  // namespace protocol
