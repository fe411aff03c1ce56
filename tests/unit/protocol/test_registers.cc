#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "protocol/amd64_registers.h"
#include "protocol/register_file.h"

namespace test_registers {  // this file's own names, apart in a unity build

using namespace protocol;

namespace {
unsigned idx(Amd64Reg reg) { return static_cast<unsigned>(reg); }

std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("register table matches the enum and gdb's amd64 layout", "[registers]") {
  CHECK(kAmd64Registers[idx(Amd64Reg::rax)].name == "rax");
  CHECK(kAmd64Registers[idx(Amd64Reg::rsp)].name == "rsp");
  CHECK(kAmd64Registers[idx(Amd64Reg::rsp)].type == "data_ptr");
  CHECK(kAmd64Registers[idx(Amd64Reg::r15)].name == "r15");
  CHECK(kAmd64Registers[idx(Amd64Reg::rip)].type == "code_ptr");
  CHECK(kAmd64Registers[idx(Amd64Reg::eflags)].type == "i386_eflags");
  CHECK(kAmd64Registers[idx(Amd64Reg::gs)].name == "gs");
  CHECK(kAmd64Registers[idx(Amd64Reg::st0) + 7].name == "st7");
  CHECK(kAmd64Registers[idx(Amd64Reg::fop)].name == "fop");
  CHECK(kAmd64Registers[idx(Amd64Reg::xmm0) + 15].name == "xmm15");
  CHECK(kAmd64Registers[idx(Amd64Reg::mxcsr)].feature == "sse");
  CHECK(kAmd64Registers[idx(Amd64Reg::orig_rax)].feature == "linux");
  CHECK(kAmd64Registers[idx(Amd64Reg::gs_base)].name == "gs_base");
  CHECK(kAmd64Registers[idx(Amd64Reg::gs_base)].feature == "segments");

  CHECK(amd64_register_size(idx(Amd64Reg::rax)) == 8);
  CHECK(amd64_register_size(idx(Amd64Reg::eflags)) == 4);
  CHECK(amd64_register_size(idx(Amd64Reg::st0)) == 10);
  CHECK(amd64_register_size(idx(Amd64Reg::xmm0)) == 16);
  CHECK(amd64_register_size(kAmd64RegisterCount) == 0);
  // Offsets as gdb 13 computes them for this description
  // ("maint print remote-registers").
  CHECK(amd64_register_offset(idx(Amd64Reg::rip)) == 128);
  CHECK(amd64_register_offset(idx(Amd64Reg::st0)) == 164);
  CHECK(amd64_register_offset(idx(Amd64Reg::xmm0)) == 276);
  CHECK(amd64_register_offset(idx(Amd64Reg::mxcsr)) == 532);
  CHECK(amd64_register_offset(idx(Amd64Reg::orig_rax)) == 536);
  CHECK(amd64_register_offset(idx(Amd64Reg::gs_base)) == 552);
  CHECK(amd64_register_offset(idx(Amd64Reg::ymm0h)) == 560);
  CHECK(amd64_register_size(idx(Amd64Reg::zmm0h)) == 32);
  CHECK(amd64_register_size(idx(Amd64Reg::k0)) == 8);
  CHECK(amd64_register_size(idx(Amd64Reg::pkru)) == 4);
  CHECK(amd64_register_size(idx(Amd64Reg::bnd0raw)) == 16);
  CHECK(amd64_register_size(idx(Amd64Reg::bndstatus)) == 8);
  // 560 + 16 ymmh + 4 bnd + bndcfgu/bndstatus + 16 xmm + 16 ymmh + 8 k + 32 zmmh + pkru.
  CHECK(amd64_register_buffer_size() == 560 + 256 + 64 + 16 + 256 + 256 + 64 + 1024 + 4);

  std::size_t offset = 0;
  for (unsigned i = 0; i < kAmd64RegisterCount; ++i) {
    CHECK(amd64_register_offset(i) == offset);
    offset += amd64_register_size(i);
  }
  CHECK(offset == amd64_register_buffer_size());
}

TEST_CASE("register numbers by name", "[registers]") {
  CHECK(amd64_register_number("rax") == 0u);
  CHECK(amd64_register_number("rip") == 16u);
  CHECK(amd64_register_number("xmm7") == 47u);
  CHECK(amd64_register_number("fs_base") == 58u);
  CHECK_FALSE(amd64_register_number("eax").has_value());
  CHECK_FALSE(amd64_register_number("").has_value());
  std::set<std::string_view> names;
  for (const auto& info : kAmd64Registers) names.insert(info.name);
  CHECK(names.size() == kAmd64RegisterCount);
}

TEST_CASE("register file availability and values", "[registers]") {
  RegisterFile regs;
  CHECK(regs.raw().size() == amd64_register_buffer_size());
  for (unsigned i = 0; i < kAmd64RegisterCount; ++i) CHECK_FALSE(regs.available(i));
  for (auto b : regs.raw()) CHECK(b == 0);

  regs.set_u64(Amd64Reg::rsp, 0x1122334455667788ull);
  CHECK(regs.available(idx(Amd64Reg::rsp)));
  CHECK_FALSE(regs.available(idx(Amd64Reg::rbp)));
  CHECK(regs.get_u64(Amd64Reg::rsp) == 0x1122334455667788ull);
  CHECK(regs.bytes(idx(Amd64Reg::rsp))[0] == 0x88);
  CHECK(regs.raw()[56] == 0x88);
  CHECK(regs.raw()[63] == 0x11);
  CHECK(regs.raw()[64] == 0);  // r8 untouched

  // A 32-bit register takes only its low 4 bytes and leaves its neighbour alone.
  regs.set_u64(Amd64Reg::cs, 0xffffffff00000033ull);
  CHECK(regs.get_u64(Amd64Reg::cs) == 0x33);
  CHECK(regs.get_u64(Amd64Reg::ss) == 0);

  // An 80-bit register: the low 8 bytes only.
  regs.set_u64(Amd64Reg::st0, 0x8000000000000000ull);
  CHECK(regs.get_u64(Amd64Reg::st0) == 0x8000000000000000ull);
  CHECK(regs.bytes(idx(Amd64Reg::st0))[8] == 0);

  regs.set_available(idx(Amd64Reg::rsp), false);
  CHECK_FALSE(regs.available(idx(Amd64Reg::rsp)));
  regs.set_all_available(true);
  CHECK(regs.available(idx(Amd64Reg::gs_base)));
  regs.set_all_available(false);
  CHECK_FALSE(regs.available(idx(Amd64Reg::rip)));
}

TEST_CASE("target.xml is one well-formed amd64 document", "[registers]") {
  std::string xml = amd64_target_xml(RegisterLayout(Amd64Features{}));
  CHECK(xml.rfind("<?xml version=\"1.0\"?>", 0) == 0);
  CHECK(count_of(xml, "<!DOCTYPE target SYSTEM \"gdb-target.dtd\">") == 1);
  CHECK(count_of(xml, "<architecture>i386:x86-64</architecture>") == 1);
  CHECK(count_of(xml, "<osabi>GNU/Linux</osabi>") == 1);
  for (const char* feature : {"core", "sse", "linux", "segments"})
    CHECK(count_of(xml, std::string("<feature name=\"org.gnu.gdb.i386.") + feature + "\">") == 1);
  CHECK(count_of(xml, "<feature ") == 4);
  CHECK(count_of(xml, "</feature>") == 4);
  CHECK(count_of(xml, "<target>") == 1);
  CHECK(xml.find("</target>") == xml.size() - std::string("</target>\n").size());
  CHECK(count_of(xml, "<reg ") == kAmd64BaseRegisterCount);
  for (unsigned i = 0; i < kAmd64BaseRegisterCount; ++i) {
    const auto& info = kAmd64Registers[i];
    std::string prefix = "<reg name=\"" + std::string(info.name) + "\" bitsize=\"" +
                         std::to_string(info.bitsize) + "\" type=\"" + std::string(info.type) +
                         "\" regnum=\"" + std::to_string(i) + "\"";
    INFO(prefix);
    CHECK(count_of(xml, prefix) == 1);
    CHECK(count_of(xml, "name=\"" + std::string(info.name) + "\"") == 1);
  }
  // Types the registers use are defined before use.
  for (const char* type : {"i386_eflags", "i386_mxcsr", "vec128"}) {
    auto def = xml.find(std::string("id=\"") + type + "\"");
    auto use = xml.find(std::string("type=\"") + type + "\"");
    INFO(type);
    REQUIRE(def != std::string::npos);
    CHECK(def < use);
  }
  // Tags balance: every '<' that opens an element is closed or self-closing.
  CHECK(count_of(xml, "<flags ") == count_of(xml, "</flags>"));
  CHECK(count_of(xml, "<union ") == count_of(xml, "</union>"));
}

namespace {
// Names of the registers of a layout, in wire order.
std::vector<std::string> names_of(const RegisterLayout& layout) {
  std::vector<std::string> out;
  for (unsigned n = 0; n < layout.count(); ++n) out.emplace_back(kAmd64Registers[layout.index(n)].name);
  return out;
}
}  // namespace

TEST_CASE("register layouts follow the CPU's features in gdb's order", "[registers]") {
  const RegisterLayout base(Amd64Features{});
  CHECK(base.count() == kAmd64BaseRegisterCount);
  CHECK(base.buffer_size() == 560);
  CHECK_FALSE(base.wire(idx(Amd64Reg::ymm0h)).has_value());
  CHECK(base.wire(idx(Amd64Reg::gs_base)) == 59u);

  // An AMD EPYC of the Zen 3 kind: AVX and PKU, no AVX-512.
  const RegisterLayout amd(Amd64Features{.avx = true, .pkeys = true});
  auto names = names_of(amd);
  REQUIRE(names.size() == 60 + 16 + 1);
  CHECK(names[59] == "gs_base");
  CHECK(names[60] == "ymm0h");
  CHECK(names[75] == "ymm15h");
  CHECK(names[76] == "pkru");  // numbered right after avx, not at its table index
  CHECK(amd.index(76) == idx(Amd64Reg::pkru));
  CHECK(amd.wire(idx(Amd64Reg::pkru)) == 76u);
  CHECK(amd.buffer_size() == 560 + 256 + 4);

  // AVX-512 and PKU (gdbserver's 149 raw registers there).
  const RegisterLayout intel(Amd64Features{.avx = true, .avx512 = true, .pkeys = true});
  names = names_of(intel);
  REQUIRE(names.size() == 149);
  CHECK(names[76] == "xmm16");
  CHECK(names[91] == "xmm31");
  CHECK(names[92] == "ymm16h");
  CHECK(names[108] == "k0");
  CHECK(names[116] == "zmm0h");
  CHECK(names[147] == "zmm31h");
  CHECK(names[148] == "pkru");

  // A Skylake server: MPX too, between avx and avx512 (the whole table).
  const RegisterLayout mpx(Amd64Features{.avx = true, .mpx = true, .avx512 = true, .pkeys = true});
  names = names_of(mpx);
  REQUIRE(names.size() == kAmd64RegisterCount);
  CHECK(names[76] == "bnd0raw");
  CHECK(names[80] == "bndcfgu");
  CHECK(names[81] == "bndstatus");
  CHECK(names[82] == "xmm16");
  for (unsigned n = 0; n < mpx.count(); ++n) CHECK(mpx.index(n) == n);
}

TEST_CASE("target.xml carries the avx, avx512 and pkeys features gdb expects", "[registers]") {
  const RegisterLayout intel(Amd64Features{.avx = true, .avx512 = true, .pkeys = true});
  std::string xml = amd64_target_xml(intel);
  // gdb's order: avx after segments, then avx512, then pkeys.
  auto segments = xml.find("<feature name=\"org.gnu.gdb.i386.segments\">");
  auto avx = xml.find("<feature name=\"org.gnu.gdb.i386.avx\">");
  auto avx512 = xml.find("<feature name=\"org.gnu.gdb.i386.avx512\">");
  auto pkeys = xml.find("<feature name=\"org.gnu.gdb.i386.pkeys\">");
  REQUIRE(segments != std::string::npos);
  REQUIRE(avx != std::string::npos);
  REQUIRE(avx512 != std::string::npos);
  REQUIRE(pkeys != std::string::npos);
  CHECK(segments < avx);
  CHECK(avx < avx512);
  CHECK(avx512 < pkeys);
  CHECK(count_of(xml, "<feature ") == 7);
  CHECK(count_of(xml, "</feature>") == 7);
  CHECK(count_of(xml, "<reg ") == 149);
  CHECK(count_of(xml, "<reg name=\"ymm0h\" bitsize=\"128\" type=\"uint128\" regnum=\"60\"") == 1);
  CHECK(count_of(xml, "<reg name=\"xmm16\" bitsize=\"128\" type=\"vec128\" regnum=\"76\"") == 1);
  CHECK(count_of(xml, "<reg name=\"k1\" bitsize=\"64\" type=\"uint64\" regnum=\"109\"") == 1);
  CHECK(count_of(xml, "<reg name=\"zmm31h\" bitsize=\"256\" type=\"v2ui128\" regnum=\"147\"") == 1);
  CHECK(count_of(xml, "<reg name=\"pkru\" bitsize=\"32\" type=\"uint32\" regnum=\"148\"") == 1);
  // gdb looks types up in the register's feature: avx512 defines its own.
  auto vec128_again = xml.find("<union id=\"vec128\">", avx512);
  CHECK(vec128_again != std::string::npos);
  CHECK(vec128_again < pkeys);
  auto v2ui128 = xml.find("<vector id=\"v2ui128\"");
  CHECK(v2ui128 > avx512);
  CHECK(v2ui128 < xml.find("type=\"v2ui128\""));
  CHECK(count_of(xml, "<union ") == count_of(xml, "</union>"));

  // MPX between avx and avx512, with gdb's types.
  xml = amd64_target_xml(RegisterLayout(Amd64Features{.avx = true, .mpx = true, .avx512 = true, .pkeys = true}));
  auto mpx = xml.find("<feature name=\"org.gnu.gdb.i386.mpx\">");
  REQUIRE(mpx != std::string::npos);
  CHECK(mpx > xml.find("<feature name=\"org.gnu.gdb.i386.avx\">"));
  CHECK(mpx < xml.find("<feature name=\"org.gnu.gdb.i386.avx512\">"));
  CHECK(count_of(xml, "<reg name=\"bnd0raw\" bitsize=\"128\" type=\"br128\" regnum=\"76\"") == 1);
  CHECK(count_of(xml, "<reg name=\"bndcfgu\" bitsize=\"64\" type=\"cfgu\" regnum=\"80\"") == 1);
  CHECK(count_of(xml, "<reg name=\"bndstatus\" bitsize=\"64\" type=\"status\" regnum=\"81\"") == 1);
  CHECK(count_of(xml, "<reg name=\"pkru\" bitsize=\"32\" type=\"uint32\" regnum=\"154\"") == 1);
  for (const char* type : {"br128", "cfgu", "status", "_bndcfgu", "_bndstatus"}) {
    INFO(type);
    CHECK(xml.find(std::string("id=\"") + type + "\"") < xml.find(std::string("type=\"") + type + "\""));
  }
  CHECK(count_of(xml, "<struct ") == count_of(xml, "</struct>"));

  // Without AVX-512 pkru is numbered right after the ymm halves.
  xml = amd64_target_xml(RegisterLayout(Amd64Features{.avx = true, .pkeys = true}));
  CHECK(count_of(xml, "org.gnu.gdb.i386.avx512") == 0);
  CHECK(count_of(xml, "<reg name=\"ymm15h\" bitsize=\"128\" type=\"uint128\" regnum=\"75\"") == 1);
  CHECK(count_of(xml, "<reg name=\"pkru\" bitsize=\"32\" type=\"uint32\" regnum=\"76\"") == 1);
}

}  // namespace test_registers
