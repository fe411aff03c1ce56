// InstructionDecoder::footprint: the memory one instruction may touch, and
// whether running it once can be undone. Byte sequences were checked with
// `as` + `objdump -d`.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decoder/instruction_decoder.h"

using decoder::MemoryTouch;
using decoder::Register;
using decoder::RegisterArray;
using Touches = std::vector<MemoryTouch>;

namespace Catch {
template <>
struct StringMaker<MemoryTouch> {
  static std::string convert(const MemoryTouch& t) {
    char text[64];
    std::snprintf(text, sizeof text, "{0x%llx, %u, %s}", static_cast<unsigned long long>(t.address),
                  unsigned{t.size}, t.written ? "written" : "read");
    return text;
  }
};
}  // namespace Catch

namespace test_decoder_footprint {  // this file's own names, apart in a unity build

namespace {

constexpr uint64_t kBase = 0x401000;
constexpr uint64_t kRax = 0x601000;  // 16-byte aligned
constexpr uint64_t kRbx = 0x602008;
constexpr uint64_t kRsp = 0x7ffe0100;
constexpr uint64_t kRbp = 0x7ffe0140;
constexpr uint64_t kFsBase = 0x7ffff7d80740;
constexpr uint64_t kFlagAlignmentCheck = uint64_t{1} << 18;

RegisterArray registers() {
  RegisterArray regs;
  regs.set(Register::Rax, kRax);
  regs.set(Register::Rbx, kRbx);
  regs.set(Register::Rcx, 3);
  regs.set(Register::Rsp, kRsp);
  regs.set(Register::Rbp, kRbp);
  regs.set(Register::Rip, kBase);
  regs.set(Register::Rflags, 0x202);
  regs.set(Register::FsBase, kFsBase);
  return regs;
}

std::optional<Touches> footprint(const std::vector<uint8_t>& buffer,
                                 const RegisterArray& regs = registers()) {
  static decoder::InstructionDecoder dec = [] {
    auto created = decoder::InstructionDecoder::create();
    REQUIRE(created.ok());
    return std::move(created.value());
  }();
  return dec.footprint(kBase, buffer.data(), buffer.size(), regs);
}

MemoryTouch read(uint64_t address, uint8_t size) { return MemoryTouch{address, size, false}; }
MemoryTouch written(uint64_t address, uint8_t size) { return MemoryTouch{address, size, true}; }

}  // namespace

TEST_CASE("footprint: explicit memory operands", "[decoder][footprint]") {
  SECTION("mov %rax,-0x8(%rbp) writes 8 bytes at rbp-8") {
    CHECK(footprint({0x48, 0x89, 0x45, 0xf8}) == Touches{written(kRbp - 8, 8)});
  }
  SECTION("mov -0x8(%rbp),%rax reads them") {
    CHECK(footprint({0x48, 0x8b, 0x45, 0xf8}) == Touches{read(kRbp - 8, 8)});
  }
  SECTION("addq $1,-0x10(%rbp) and add %rax,-0x8(%rbp) write") {
    CHECK(footprint({0x48, 0x83, 0x45, 0xf0, 0x01}) == Touches{written(kRbp - 0x10, 8)});
    CHECK(footprint({0x48, 0x01, 0x45, 0xf8}) == Touches{written(kRbp - 8, 8)});
  }
  SECTION("cmp %rax,(%rbx) and cmovl (%rax),%rcx only read") {
    CHECK(footprint({0x48, 0x39, 0x03}) == Touches{read(kRbx, 8)});
    CHECK(footprint({0x48, 0x0f, 0x4c, 0x08}) == Touches{read(kRax, 8)});
  }
  SECTION("RIP-relative: from the next instruction's address") {
    CHECK(footprint({0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00}) ==
          Touches{read(kBase + 7 + 0x10, 8)});
  }
  SECTION("%fs: adds fs_base") {
    CHECK(footprint({0x64, 0x89, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00}) ==
          Touches{written(kFsBase + 0x10, 4)});
    CHECK(footprint({0x64, 0x48, 0x8b, 0x08}) == Touches{read(kFsBase + kRax, 8)});
  }
  SECTION("0x67: 32-bit registers, the sum wraps at 2^32") {
    RegisterArray regs = registers();
    regs.set(Register::Rbx, 0xdead'ffff'fffcULL);
    regs.set(Register::Rcx, 0x1'0000'0004ULL);
    // mov -0x4(%ebx,%ecx,2),%edx: 0xfffffffc + 8 - 4 = 2^32 -> 0
    CHECK(footprint({0x67, 0x8b, 0x54, 0x4b, 0xfc}, regs) == Touches{read(0, 4)});
  }
  SECTION("stores Capstone 4 marks read-only still count as written") {
    CHECK(footprint({0x0f, 0x11, 0x00}) == Touches{written(kRax, 16)});        // movups store
    CHECK(footprint({0x66, 0x0f, 0xe7, 0x00}) == Touches{written(kRax, 16)});  // movntdq
    CHECK(footprint({0x66, 0x0f, 0xd6, 0x00}) == Touches{written(kRax, 8)});   // movq store
    CHECK(footprint({0x0f, 0xb1, 0x0b}) == Touches{written(kRbx, 4)});         // cmpxchg
    CHECK(footprint({0x0f, 0xae, 0x18}) == Touches{written(kRax, 4)});         // stmxcsr
    CHECK(footprint({0xf2, 0x0f, 0x11, 0x00}) == Touches{written(kRax, 8)});   // movsd store
  }
  SECTION("SSE movsd is not the string movsd") {
    CHECK(footprint({0xf2, 0x0f, 0x10, 0x00}) == Touches{read(kRax, 8)});
    CHECK_FALSE(footprint({0xa5}).has_value());  // movsl
  }
  SECTION("bt with an immediate offset stays in the operand") {
    CHECK(footprint({0x48, 0x0f, 0xba, 0x2b, 0x03}) == Touches{written(kRbx, 8)});
  }
}

TEST_CASE("footprint: no memory access", "[decoder][footprint]") {
  CHECK(footprint({0x48, 0xd1, 0xf8}) == Touches{});                          // sar %rax
  CHECK(footprint({0x48, 0x8d, 0x45, 0xf8}) == Touches{});                    // lea
  CHECK(footprint({0x7c, 0x05}) == Touches{});                                // jl rel8
  CHECK(footprint({0x0f, 0x18, 0x08}) == Touches{});                          // prefetcht0
  CHECK(footprint({0x0f, 0x1f, 0x00}) == Touches{});                          // nopl (%rax)
  CHECK(footprint({0x48, 0x93}) == Touches{});                                // xchg %rax,%rbx
  CHECK(footprint({0xf3, 0x0f, 0x1e, 0xfa}) == Touches{});                    // endbr64
}

TEST_CASE("footprint: the stack slot of push, pop, call, ret and leave", "[decoder][footprint]") {
  SECTION("push %rbp, push $1, pushf") {
    CHECK(footprint({0x55}) == Touches{written(kRsp - 8, 8)});
    CHECK(footprint({0x6a, 0x01}) == Touches{written(kRsp - 8, 8)});
    CHECK(footprint({0x9c}) == Touches{written(kRsp - 8, 8)});
  }
  SECTION("pushw $1 pushes 2 bytes") {
    CHECK(footprint({0x66, 0x6a, 0x01}) == Touches{written(kRsp - 2, 2)});
  }
  SECTION("push (%rax) reads the operand, then writes the slot") {
    CHECK(footprint({0xff, 0x30}) == Touches{read(kRax, 8), written(kRsp - 8, 8)});
  }
  SECTION("pop %rbp and pop (%rax)") {
    CHECK(footprint({0x5d}) == Touches{read(kRsp, 8)});
    CHECK(footprint({0x8f, 0x00}) == Touches{written(kRax, 8), read(kRsp, 8)});
  }
  SECTION("pop 0x8(%rsp) addresses its destination with rsp already popped") {
    CHECK(footprint({0x8f, 0x44, 0x24, 0x08}) ==
          Touches{written(kRsp + 8 + 8, 8), read(kRsp, 8)});
  }
  SECTION("call rel32 and call *(%rax)") {
    CHECK(footprint({0xe8, 0x00, 0x00, 0x00, 0x00}) == Touches{written(kRsp - 8, 8)});
    CHECK(footprint({0xff, 0x10}) == Touches{read(kRax, 8), written(kRsp - 8, 8)});
  }
  SECTION("jmp *(%rax) reads the pointer only") {
    CHECK(footprint({0xff, 0x20}) == Touches{read(kRax, 8)});
  }
  SECTION("ret and ret $0x10") {
    CHECK(footprint({0xc3}) == Touches{read(kRsp, 8)});
    CHECK(footprint({0xc2, 0x10, 0x00}) == Touches{read(kRsp, 8)});
  }
  SECTION("leave reads the saved rbp") {
    CHECK(footprint({0xc9}) == Touches{read(kRbp, 8)});
  }
}

TEST_CASE("footprint: 16-byte SSE operands and alignment", "[decoder][footprint]") {
  RegisterArray misaligned = registers();
  misaligned.set(Register::Rax, kRax + 8);
  SECTION("movaps needs 16-byte alignment") {
    CHECK(footprint({0x0f, 0x28, 0x00}) == Touches{read(kRax, 16)});
    CHECK_FALSE(footprint({0x0f, 0x28, 0x00}, misaligned).has_value());
  }
  SECTION("movups does not: it is kept when misaligned") {
    CHECK(footprint({0x0f, 0x10, 0x00}, misaligned) == Touches{read(kRax + 8, 16)});
  }
  SECTION("with rflags.AC set any access may raise SIGBUS") {
    RegisterArray ac = registers();
    ac.set(Register::Rflags, 0x202 | kFlagAlignmentCheck);
    CHECK_FALSE(footprint({0x48, 0x89, 0x45, 0xf8}, ac).has_value());
    CHECK(footprint({0x48, 0xd1, 0xf8}, ac) == Touches{});
  }
}

TEST_CASE("footprint: refused instructions", "[decoder][footprint]") {
  using Bytes = std::vector<uint8_t>;  // an initializer_list member would dangle
  const std::pair<const char*, Bytes> refused[] = {
      {"syscall", {0x0f, 0x05}},
      {"int3", {0xcc}},
      {"int $0x80", {0xcd, 0x80}},
      {"ud2", {0x0f, 0x0b}},
      {"hlt", {0xf4}},
      {"rep movsb", {0xf3, 0xa4}},
      {"stosb", {0xaa}},
      {"xlat", {0xd7}},
      {"cpuid", {0x0f, 0xa2}},
      {"rdtsc", {0x0f, 0x31}},
      {"div %rcx", {0x48, 0xf7, 0xf1}},
      {"idivq (%rbx)", {0x48, 0xf7, 0x3b}},
      {"lock addl $1,(%rax)", {0xf0, 0x83, 0x00, 0x01}},
      {"xchg %rax,(%rbx)", {0x48, 0x87, 0x03}},
      {"bt %rax,(%rbx)", {0x48, 0x0f, 0xa3, 0x03}},
      {"flds (%rax)", {0xd9, 0x00}},
      {"emms", {0x0f, 0x77}},
      {"vmovdqa (%rax),%xmm0", {0xc5, 0xf9, 0x6f, 0x00}},
      {"vzeroupper", {0xc5, 0xf8, 0x77}},
      {"sarx (VEX)", {0xc4, 0xe2, 0x7a, 0xf7, 0xc0}},
      {"popf", {0x9d}},
      {"enter $0x10,$0", {0xc8, 0x10, 0x00, 0x00}},
      {"xsave (%rax)", {0x0f, 0xae, 0x20}},
      {"fxsave (%rax)", {0x0f, 0xae, 0x00}},
      {"ldmxcsr (%rax)", {0x0f, 0xae, 0x10}},
      {"clflush (%rax)", {0x0f, 0xae, 0x38}},
      {"incsspq %rax (Capstone 4: lfence)", {0xf3, 0x48, 0x0f, 0xae, 0xe8}},
      {"cmpxchg16b (%rsi)", {0x48, 0x0f, 0xc7, 0x0e}},
      {"mov %eax,%ds", {0x8e, 0xd8}},
      {"callw (0x66 near call)", {0x66, 0xe8, 0x01, 0x00}},
      {"xbegin", {0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00}},
      {"sgdt (%rax)", {0x0f, 0x01, 0x00}},
      {"truncated mov", {0x48, 0x89, 0x45}},
      {"invalid in 64-bit mode (push %es)", {0x06}},
  };
  for (const auto& [name, bytes] : refused) {
    INFO(name);
    CHECK_FALSE(footprint(bytes).has_value());
  }
}

}  // namespace test_decoder_footprint
