// BranchEvaluator: where does the next instruction come from, given
// registers and data memory before the instruction executes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

#include "decoder/branch_evaluator.h"
#include "decoder/instruction_decoder.h"

namespace test_decoder_evaluate {  // this file's own names, apart in a unity build

using btstub::ErrorCode;
using decoder::Condition;
using decoder::Instruction;
using decoder::NextKind;
using decoder::NextPc;
using decoder::Register;
using decoder::RegisterArray;

namespace {

constexpr uint64_t kBase = 0x401000;
constexpr uint64_t CF = decoder::kFlagCarry;
constexpr uint64_t PF = decoder::kFlagParity;
constexpr uint64_t ZF = decoder::kFlagZero;
constexpr uint64_t SF = decoder::kFlagSign;
constexpr uint64_t OF = decoder::kFlagOverflow;
constexpr uint64_t kReservedBit1 = 0x2;  // always set in real RFLAGS

// Sparse byte-addressed memory; a read stops at the first missing byte.
class FakeMemory final : public decoder::MemoryReader {
 public:
  void put64(uint64_t addr, uint64_t value) {
    for (int i = 0; i < 8; ++i) bytes_[addr + i] = uint8_t(value >> (8 * i));
  }
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    std::size_t n = 0;
    for (; n < len; ++n) {
      auto it = bytes_.find(addr + n);
      if (it == bytes_.end()) break;
      out[n] = it->second;
    }
    return n;
  }

 private:
  std::map<uint64_t, uint8_t> bytes_;
};

Instruction must_decode(uint64_t addr, std::initializer_list<uint8_t> bytes) {
  static decoder::InstructionDecoder dec = [] {
    auto created = decoder::InstructionDecoder::create();
    REQUIRE(created.ok());
    return std::move(created.value());
  }();
  const std::vector<uint8_t> buffer(bytes);
  auto insn = dec.decode(addr, buffer.data(), buffer.size());
  REQUIRE(insn.has_value());
  return *insn;
}

NextPc must_eval(const Instruction& insn, const RegisterArray& regs, FakeMemory& mem) {
  auto next = decoder::next_pc(insn, regs, mem);
  INFO(insn.text << ": " << (next.ok() ? "" : next.error().message));
  REQUIRE(next.ok());
  return *next;
}

RegisterArray flags(uint64_t rflags) {
  RegisterArray regs;
  regs.set(Register::Rflags, rflags | kReservedBit1);
  return regs;
}

}  // namespace

TEST_CASE("evaluator: jcc taken and not taken for every condition", "[decoder]") {
  // Per condition code 0..15: a flag set that takes the branch and one that
  // does not, chosen from the Intel SDM definitions.
  struct Case { uint64_t taken; uint64_t not_taken; };
  const Case cases[16] = {
      {OF, 0},            // jo
      {0, OF},            // jno
      {CF, ZF},           // jb
      {ZF, CF},           // jae
      {ZF, CF},           // je
      {CF, ZF},           // jne
      {ZF, SF},           // jbe (ZF alone)
      {SF | OF, CF},      // ja
      {SF, ZF | OF},      // js
      {OF, SF},           // jns
      {PF, CF | ZF},      // jp
      {CF, PF},           // jnp
      {OF, SF | OF},      // jl  (SF != OF)
      {SF | OF, SF},      // jge (SF == OF)
      {SF, OF | SF},      // jle (SF != OF, ZF clear)
      {0, ZF | SF | OF},  // jg  (ZF set blocks it)
  };
  FakeMemory mem;
  for (uint8_t cc = 0; cc < 16; ++cc) {
    CAPTURE(cc);
    // j<cc> .+0x12 (7x 10) and j<cc> .+0x106 (0f 8x 00 01 00 00)
    const Instruction forms[2] = {
        must_decode(kBase, {uint8_t(0x70 + cc), 0x10}),
        must_decode(kBase, {0x0f, uint8_t(0x80 + cc), 0x00, 0x01, 0x00, 0x00})};
    for (const Instruction& insn : forms) {
      CAPTURE(insn.text);
      const NextPc taken = must_eval(insn, flags(cases[cc].taken), mem);
      CHECK(taken.kind == NextKind::Branch);
      CHECK(taken.taken());
      CHECK(taken.target == *insn.target);
      const NextPc fall = must_eval(insn, flags(cases[cc].not_taken), mem);
      CHECK(fall.kind == NextKind::FallThrough);
      CHECK_FALSE(fall.taken());
      CHECK(fall.target == insn.next_address());
    }
  }
}

TEST_CASE("evaluator: paired condition codes are exact complements", "[decoder]") {
  const Condition taken_sense[8] = {Condition::O, Condition::B, Condition::E,
                                    Condition::BE, Condition::S, Condition::P,
                                    Condition::L, Condition::LE};
  const Condition negated[8] = {Condition::NO, Condition::AE, Condition::NE,
                                Condition::A,  Condition::NS, Condition::NP,
                                Condition::GE, Condition::G};
  const uint64_t bits[5] = {CF, PF, ZF, SF, OF};
  for (unsigned combo = 0; combo < 32; ++combo) {
    uint64_t rflags = kReservedBit1;
    for (unsigned b = 0; b < 5; ++b) {
      if (combo & (1u << b)) rflags |= bits[b];
    }
    for (int i = 0; i < 8; ++i) {
      CAPTURE(combo, i);
      CHECK(decoder::condition_holds(taken_sense[i], rflags) !=
            decoder::condition_holds(negated[i], rflags));
    }
  }
  CHECK_FALSE(decoder::condition_holds(Condition::None, ~uint64_t{0}));
  // Signed vs unsigned: -1 < 1 signed (SF=1, OF=0), but 0xff..ff > 1 unsigned.
  CHECK(decoder::condition_holds(Condition::L, SF));
  CHECK(decoder::condition_holds(Condition::A, SF));
  CHECK_FALSE(decoder::condition_holds(Condition::B, SF));
}

TEST_CASE("evaluator: direct jmp and call always branch", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  // jmp . (eb fe)
  const NextPc self = must_eval(must_decode(kBase, {0xeb, 0xfe}), regs, mem);
  CHECK(self.kind == NextKind::Branch);
  CHECK(self.target == kBase);
  // jmp 0x402000 (e9 fb 0f 00 00)
  CHECK(must_eval(must_decode(kBase, {0xe9, 0xfb, 0x0f, 0x00, 0x00}), regs, mem)
            .target == 0x402000);
  // call 0x400005 (e8 00 f0 ff ff)
  const NextPc call =
      must_eval(must_decode(kBase, {0xe8, 0x00, 0xf0, 0xff, 0xff}), regs, mem);
  CHECK(call.kind == NextKind::Branch);
  CHECK(call.target == 0x400005);
}

TEST_CASE("evaluator: indirect call and jmp through registers and memory", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  regs.set(Register::Rax, 0x401234);
  regs.set(Register::R11, 0x7ffff7dd0000);
  regs.set(Register::Rbx, 0x600000);
  regs.set(Register::Rcx, 3);
  // call *%rax (ff d0)
  CHECK(must_eval(must_decode(kBase, {0xff, 0xd0}), regs, mem).target == 0x401234);
  // jmp *%r11 (41 ff e3)
  CHECK(must_eval(must_decode(kBase, {0x41, 0xff, 0xe3}), regs, mem).target ==
        0x7ffff7dd0000);
  // notrack jmp *%rax (3e ff e0)
  CHECK(must_eval(must_decode(kBase, {0x3e, 0xff, 0xe0}), regs, mem).target == 0x401234);

  // call *0x10(%rbx,%rcx,8) (ff 54 cb 10): reads [0x600000 + 3*8 + 0x10]
  const Instruction call_mem = must_decode(kBase, {0xff, 0x54, 0xcb, 0x10});
  auto missing = decoder::next_pc(call_mem, regs, mem);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::MemoryFault);
  mem.put64(0x600028, 0x00007f0012345678);
  const NextPc via_table = must_eval(call_mem, regs, mem);
  CHECK(via_table.kind == NextKind::Branch);
  CHECK(via_table.target == 0x00007f0012345678);

  // jmp *-0x8(%rax) (ff 60 f8): negative displacement
  mem.put64(0x401234 - 8, 0x405000);
  CHECK(must_eval(must_decode(kBase, {0xff, 0x60, 0xf8}), regs, mem).target == 0x405000);
}

TEST_CASE("evaluator: PLT-style RIP-relative jumps read the GOT slot", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  // jmp *0x2fe2(%rip) (ff 25 e2 2f 00 00) at 0x401020 -> slot 0x404008
  mem.put64(0x404008, 0x7ffff7a01234);
  const Instruction plt = must_decode(0x401020, {0xff, 0x25, 0xe2, 0x2f, 0x00, 0x00});
  CHECK(must_eval(plt, regs, mem).target == 0x7ffff7a01234);
  // bnd jmp *0x2fe2(%rip) (f2 ff 25 e2 2f 00 00) at 0x401000 -> slot 0x403fe9
  mem.put64(0x403fe9, 0x7ffff7a05678);
  const Instruction bnd = must_decode(kBase, {0xf2, 0xff, 0x25, 0xe2, 0x2f, 0x00, 0x00});
  CHECK(must_eval(bnd, regs, mem).target == 0x7ffff7a05678);
}

TEST_CASE("evaluator: fs/gs segment bases and 32-bit addressing", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  regs.set(Register::FsBase, 0x7ffff7d80740);
  regs.set(Register::GsBase, 0x7ffff7e00000);
  regs.set(Register::Rax, 0x10);
  // jmp *%fs:0x28 (64 ff 24 25 28 00 00 00)
  mem.put64(0x7ffff7d80740 + 0x28, 0x401111);
  mem.put64(0x28, 0xbad);  // what a segment-blind evaluator would read
  const Instruction fs =
      must_decode(kBase, {0x64, 0xff, 0x24, 0x25, 0x28, 0x00, 0x00, 0x00});
  CHECK(must_eval(fs, regs, mem).target == 0x401111);
  // call *%gs:(%rax) (65 ff 10)
  mem.put64(0x7ffff7e00010, 0x402222);
  CHECK(must_eval(must_decode(kBase, {0x65, 0xff, 0x10}), regs, mem).target == 0x402222);
  // jmp *(%eax) (67 ff 20): the upper half of rax is ignored
  regs.set(Register::Rax, 0xffffffff00403000);
  mem.put64(0x403000, 0x403333);
  CHECK(must_eval(must_decode(kBase, {0x67, 0xff, 0x20}), regs, mem).target == 0x403333);
}

TEST_CASE("evaluator: returns read the return address at rsp", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  regs.set(Register::Rsp, 0x7ffe0000);
  mem.put64(0x7ffe0000, 0x401500);
  mem.put64(0x7ffe0008, 0x999999);
  for (auto bytes : {std::initializer_list<uint8_t>{0xc3},               // ret
                     std::initializer_list<uint8_t>{0xc2, 0x10, 0x00},   // ret $0x10
                     std::initializer_list<uint8_t>{0xf2, 0xc3},         // bnd ret
                     std::initializer_list<uint8_t>{0xf3, 0xc3}}) {      // rep ret
    const Instruction ret = must_decode(kBase, bytes);
    CAPTURE(ret.text);
    const NextPc next = must_eval(ret, regs, mem);
    CHECK(next.kind == NextKind::Branch);
    CHECK(next.target == 0x401500);
  }
  regs.set(Register::Rsp, 0x7ffd0000);  // unmapped stack
  auto fault = decoder::next_pc(must_decode(kBase, {0xc3}), regs, mem);
  REQUIRE_FALSE(fault.ok());
  CHECK(fault.error().code == ErrorCode::MemoryFault);
  CHECK(fault.error().message.find("0x7ffd0000") != std::string::npos);
}

TEST_CASE("evaluator: loop family tests the counter before execution", "[decoder]") {
  FakeMemory mem;
  const Instruction loop = must_decode(kBase, {0xe2, 0xfe});     // loop .
  const Instruction loope = must_decode(kBase, {0xe1, 0xfe});    // loope .
  const Instruction loopne = must_decode(kBase, {0xe0, 0xfe});   // loopne .
  const Instruction jrcxz = must_decode(kBase, {0xe3, 0xfe});    // jrcxz .
  const Instruction jecxz = must_decode(kBase, {0x67, 0xe3, 0xfe});  // jecxz .+1
  const Instruction loopl = must_decode(kBase, {0x67, 0xe2, 0xfe});  // loopl .+1

  auto taken = [&](const Instruction& insn, uint64_t rcx, uint64_t rflags) {
    RegisterArray regs = flags(rflags);
    regs.set(Register::Rcx, rcx);
    const NextPc next = must_eval(insn, regs, mem);
    CHECK(next.target == (next.taken() ? *insn.target : insn.next_address()));
    return next.taken();
  };
  CHECK(taken(loop, 2, 0));
  CHECK_FALSE(taken(loop, 1, 0));  // rcx becomes 0
  CHECK(taken(loop, 0, 0));        // rcx wraps to ~0
  CHECK(taken(loope, 5, ZF));
  CHECK_FALSE(taken(loope, 5, 0));
  CHECK_FALSE(taken(loope, 1, ZF));
  CHECK(taken(loopne, 5, 0));
  CHECK_FALSE(taken(loopne, 5, ZF));
  CHECK_FALSE(taken(loopne, 1, 0));
  CHECK(taken(jrcxz, 0, 0));
  CHECK_FALSE(taken(jrcxz, 1, 0));
  CHECK_FALSE(taken(jrcxz, 0x100000000, 0));
  CHECK(taken(jecxz, 0x100000000, 0));  // ecx == 0
  CHECK_FALSE(taken(jecxz, 0x100000001, 0));
  CHECK(taken(loop, 0x100000001, 0));
  CHECK_FALSE(taken(loopl, 0x100000001, 0));  // ecx becomes 0
}

TEST_CASE("evaluator: syscalls continue after the instruction", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  const NextPc sc = must_eval(must_decode(kBase, {0x0f, 0x05}), regs, mem);  // syscall
  CHECK(sc.kind == NextKind::Syscall);
  CHECK(sc.target == kBase + 2);
  CHECK_FALSE(sc.taken());
  const NextPc i80 = must_eval(must_decode(kBase, {0xcd, 0x80}), regs, mem);  // int $0x80
  CHECK(i80.kind == NextKind::Syscall);
  CHECK(i80.target == kBase + 2);
  auto se = decoder::next_pc(must_decode(kBase, {0x0f, 0x34}), regs, mem);  // sysenter
  REQUIRE_FALSE(se.ok());
  CHECK(se.error().code == ErrorCode::NotSupported);
}

TEST_CASE("evaluator: traps and interrupts stop", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  // int3 (cc): SIGTRAP reported after the instruction
  const NextPc int3 = must_eval(must_decode(kBase, {0xcc}), regs, mem);
  CHECK(int3.kind == NextKind::Stop);
  CHECK(int3.target == kBase + 1);
  // ud2 (0f 0b), hlt (f4), int $0x29 (cd 29): fault on the instruction
  for (auto bytes : {std::initializer_list<uint8_t>{0x0f, 0x0b},
                     std::initializer_list<uint8_t>{0xf4},
                     std::initializer_list<uint8_t>{0xcd, 0x29}}) {
    const Instruction insn = must_decode(kBase, bytes);
    CAPTURE(insn.text);
    const NextPc stop = must_eval(insn, regs, mem);
    CHECK(stop.kind == NextKind::Stop);
    CHECK(stop.target == kBase);
  }
}

TEST_CASE("evaluator: unpredictable transfers are errors, not guesses", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  regs.set(Register::Rax, 0x600000);
  regs.set(Register::Rsp, 0x7ffe0000);
  mem.put64(0x600000, 0x401000);
  mem.put64(0x7ffe0000, 0x401000);
  for (auto bytes : {std::initializer_list<uint8_t>{0xff, 0x28},        // ljmp *(%rax)
                     std::initializer_list<uint8_t>{0xff, 0x18},        // lcall *(%rax)
                     std::initializer_list<uint8_t>{0x48, 0xcf},        // iretq
                     std::initializer_list<uint8_t>{0x48, 0xcb},        // lretq
                     std::initializer_list<uint8_t>{0xc7, 0xf8, 0x10, 0, 0, 0},  // xbegin
                     std::initializer_list<uint8_t>{0x66, 0xe9, 0x00, 0x01},     // jmpw
                     std::initializer_list<uint8_t>{0x66, 0xc3}}) {              // retw
    const Instruction insn = must_decode(kBase, bytes);
    CAPTURE(insn.text);
    auto next = decoder::next_pc(insn, regs, mem);
    REQUIRE_FALSE(next.ok());
    CHECK(next.error().code == ErrorCode::NotSupported);
    CHECK(next.error().message.find(insn.text) != std::string::npos);
  }
}

TEST_CASE("evaluator: non-branches fall through", "[decoder]") {
  FakeMemory mem;
  RegisterArray regs;
  for (auto bytes : {std::initializer_list<uint8_t>{0xf3, 0x0f, 0x1e, 0xfa},  // endbr64
                     std::initializer_list<uint8_t>{0x48, 0x89, 0xc3},        // mov
                     std::initializer_list<uint8_t>{0x48, 0x01, 0xd8}}) {     // add
    const Instruction insn = must_decode(kBase, bytes);
    const NextPc next = must_eval(insn, regs, mem);
    CHECK(next.kind == NextKind::FallThrough);
    CHECK(next.target == kBase + insn.size);
  }
}

}  // namespace test_decoder_evaluate
