#include <catch2/catch.hpp>

#include <set>

#include "protocol/amd64_registers.h"
#include "protocol/register_file.h"

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
  CHECK(amd64_register_buffer_size() == 560);

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
  std::string xml = amd64_target_xml();
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
  CHECK(count_of(xml, "<reg ") == kAmd64RegisterCount);
  for (unsigned i = 0; i < kAmd64RegisterCount; ++i) {
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
