// Decoding and classification of x86-64 control transfers (Capstone 4).
// Byte sequences were checked with `objdump -D -b binary -mi386:x86-64`.
#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"

namespace test_decoder_classify {  // this file's own names, apart in a unity build

using decoder::Condition;
using decoder::ControlKind;
using decoder::Instruction;
using decoder::LoopOp;
using decoder::MemoryOperand;
using decoder::Register;
using decoder::RegisterRef;

namespace {

constexpr uint64_t kBase = 0x401000;

decoder::InstructionDecoder make_decoder() {
  auto created = decoder::InstructionDecoder::create();
  REQUIRE(created.ok());
  return std::move(created.value());
}

std::optional<Instruction> decode_at(uint64_t addr, std::initializer_list<uint8_t> bytes) {
  static decoder::InstructionDecoder dec = make_decoder();
  const std::vector<uint8_t> buffer(bytes);
  return dec.decode(addr, buffer.data(), buffer.size());
}

Instruction must_decode(uint64_t addr, std::initializer_list<uint8_t> bytes) {
  auto insn = decode_at(addr, bytes);
  REQUIRE(insn.has_value());
  return *insn;
}

const MemoryOperand& memory_of(const Instruction& insn) {
  REQUIRE(std::holds_alternative<MemoryOperand>(insn.indirect));
  return std::get<MemoryOperand>(insn.indirect);
}

// Counts how many bytes the decoder asked for and serves a buffer.
class RecordingReader final : public decoder::CodeReader {
 public:
  RecordingReader(uint64_t base, std::vector<uint8_t> bytes)
      : base_(base), bytes_(std::move(bytes)) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    last_request = len;
    decoder::BufferReader inner(base_, bytes_.data(), bytes_.size());
    return inner.read(addr, out, len);
  }
  std::size_t last_request = 0;

 private:
  uint64_t base_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

TEST_CASE("decoder: jcc short and near, every condition code", "[decoder]") {
  const Condition expected[16] = {
      Condition::O, Condition::NO, Condition::B,  Condition::AE,
      Condition::E, Condition::NE, Condition::BE, Condition::A,
      Condition::S, Condition::NS, Condition::P,  Condition::NP,
      Condition::L, Condition::GE, Condition::LE, Condition::G};
  for (uint8_t cc = 0; cc < 16; ++cc) {
    CAPTURE(cc);
    // j<cc> .+0x12  (7x 10)
    const Instruction short_form = must_decode(kBase, {uint8_t(0x70 + cc), 0x10});
    CHECK(short_form.kind == ControlKind::ConditionalJump);
    CHECK(short_form.condition == expected[cc]);
    CHECK(short_form.size == 2);
    CHECK(short_form.target == kBase + 2 + 0x10);
    // j<cc> .-0x100+6  (0f 8x 00 ff ff ff)
    const Instruction near_form =
        must_decode(kBase, {0x0f, uint8_t(0x80 + cc), 0x00, 0xff, 0xff, 0xff});
    CHECK(near_form.kind == ControlKind::ConditionalJump);
    CHECK(near_form.condition == expected[cc]);
    CHECK(near_form.size == 6);
    CHECK(near_form.target == kBase + 6 - 0x100);
    CHECK(near_form.can_fall_through());
  }
  // jne 0x401100
  const Instruction jne = must_decode(kBase, {0x0f, 0x85, 0xfa, 0x00, 0x00, 0x00});
  CHECK(jne.text == "jne 0x401100");
}

TEST_CASE("decoder: direct jmp and call", "[decoder]") {
  // jmp . (eb fe)
  const Instruction self = must_decode(kBase, {0xeb, 0xfe});
  CHECK(self.kind == ControlKind::Jump);
  CHECK(self.target == kBase);
  CHECK_FALSE(self.can_fall_through());
  // jmp 0x402000 (e9 fb 0f 00 00)
  const Instruction fwd = must_decode(kBase, {0xe9, 0xfb, 0x0f, 0x00, 0x00});
  CHECK(fwd.kind == ControlKind::Jump);
  CHECK(fwd.size == 5);
  CHECK(fwd.target == 0x402000);
  // jmp 0x400005 (e9 00 f0 ff ff): negative rel32
  CHECK(must_decode(kBase, {0xe9, 0x00, 0xf0, 0xff, 0xff}).target == 0x400005);
  // call 0x402000 (e8 fb 0f 00 00)
  const Instruction call = must_decode(kBase, {0xe8, 0xfb, 0x0f, 0x00, 0x00});
  CHECK(call.kind == ControlKind::Call);
  CHECK(call.target == 0x402000);
  CHECK(call.next_address() == kBase + 5);
  CHECK_FALSE(call.can_fall_through());
  CHECK(std::holds_alternative<std::monostate>(call.indirect));
}

TEST_CASE("decoder: indirect call and jmp operands", "[decoder]") {
  // call *%rax (ff d0)
  const Instruction call_rax = must_decode(kBase, {0xff, 0xd0});
  CHECK(call_rax.kind == ControlKind::IndirectCall);
  CHECK_FALSE(call_rax.target.has_value());
  REQUIRE(std::holds_alternative<RegisterRef>(call_rax.indirect));
  CHECK(std::get<RegisterRef>(call_rax.indirect) == RegisterRef{Register::Rax, 8});

  // jmp *%r11 (41 ff e3)
  const Instruction jmp_r11 = must_decode(kBase, {0x41, 0xff, 0xe3});
  CHECK(jmp_r11.kind == ControlKind::IndirectJump);
  CHECK(std::get<RegisterRef>(jmp_r11.indirect) == RegisterRef{Register::R11, 8});

  // call *0x10(%rbx,%rcx,8) (ff 54 cb 10)
  const Instruction call_mem = must_decode(kBase, {0xff, 0x54, 0xcb, 0x10});
  CHECK(call_mem.kind == ControlKind::IndirectCall);
  const MemoryOperand& m = memory_of(call_mem);
  CHECK(m.base == RegisterRef{Register::Rbx, 8});
  CHECK(m.index == RegisterRef{Register::Rcx, 8});
  CHECK(m.scale == 8);
  CHECK(m.disp == 0x10);
  CHECK(m.segment == decoder::Segment::None);
  CHECK(m.access_size == 8);
  CHECK_FALSE(m.rip_relative);

  // jmp *-0x8(%rax) (ff 60 f8)
  CHECK(memory_of(must_decode(kBase, {0xff, 0x60, 0xf8})).disp == -8);
}

TEST_CASE("decoder: RIP-relative jmp resolves against the next instruction", "[decoder]") {
  // PLT style: jmp *0x2fe2(%rip) (ff 25 e2 2f 00 00) at 0x401020
  const Instruction plt = must_decode(0x401020, {0xff, 0x25, 0xe2, 0x2f, 0x00, 0x00});
  CHECK(plt.kind == ControlKind::IndirectJump);
  CHECK(plt.text == "jmp qword ptr [rip + 0x2fe2]");
  const MemoryOperand& m = memory_of(plt);
  CHECK(m.rip_relative);
  CHECK_FALSE(m.base.has_value());
  CHECK_FALSE(m.index.has_value());
  CHECK(m.disp == 0x401026 + 0x2fe2);

  // call *0x2fe2(%rip) (ff 15 e2 2f 00 00)
  const Instruction call = must_decode(kBase, {0xff, 0x15, 0xe2, 0x2f, 0x00, 0x00});
  CHECK(call.kind == ControlKind::IndirectCall);
  CHECK(memory_of(call).disp == kBase + 6 + 0x2fe2);
}

TEST_CASE("decoder: notrack and bnd prefixes keep the transfer kind", "[decoder]") {
  // notrack jmp *%rax (3e ff e0)
  const Instruction notrack = must_decode(kBase, {0x3e, 0xff, 0xe0});
  CHECK(notrack.kind == ControlKind::IndirectJump);
  CHECK(notrack.size == 3);
  CHECK(std::get<RegisterRef>(notrack.indirect) == RegisterRef{Register::Rax, 8});

  // bnd jmp *0x2fe2(%rip) (f2 ff 25 e2 2f 00 00): 7 bytes, so RIP base moves
  const Instruction bnd_jmp =
      must_decode(kBase, {0xf2, 0xff, 0x25, 0xe2, 0x2f, 0x00, 0x00});
  CHECK(bnd_jmp.kind == ControlKind::IndirectJump);
  CHECK(bnd_jmp.size == 7);
  CHECK(memory_of(bnd_jmp).disp == kBase + 7 + 0x2fe2);

  // bnd ret (f2 c3)
  const Instruction bnd_ret = must_decode(kBase, {0xf2, 0xc3});
  CHECK(bnd_ret.kind == ControlKind::Return);
  CHECK(bnd_ret.size == 2);

  // notrack jmp *(%rax,%rax,8) with a ds: prefix is not a segment base
  // (3e ff 24 c5 00 00 00 00)
  const Instruction table =
      must_decode(kBase, {0x3e, 0xff, 0x24, 0xc5, 0x00, 0x00, 0x00, 0x00});
  CHECK(memory_of(table).segment == decoder::Segment::None);
  CHECK(memory_of(table).index == RegisterRef{Register::Rax, 8});
}

TEST_CASE("decoder: segment and address-size forms", "[decoder]") {
  // jmp *%fs:0x28 (64 ff 24 25 28 00 00 00)
  const MemoryOperand fs =
      memory_of(must_decode(kBase, {0x64, 0xff, 0x24, 0x25, 0x28, 0x00, 0x00, 0x00}));
  CHECK(fs.segment == decoder::Segment::Fs);
  CHECK(fs.disp == 0x28);
  CHECK_FALSE(fs.base.has_value());
  // call *%gs:(%rax) (65 ff 10)
  const Instruction gs = must_decode(kBase, {0x65, 0xff, 0x10});
  CHECK(gs.kind == ControlKind::IndirectCall);
  CHECK(memory_of(gs).segment == decoder::Segment::Gs);
  // jmp *(%eax) (67 ff 20)
  const MemoryOperand a32 = memory_of(must_decode(kBase, {0x67, 0xff, 0x20}));
  CHECK(a32.address_size == 4);
  CHECK(a32.base == RegisterRef{Register::Rax, 4});
  // jmpw 0x1104 (66 e9 00 01): vendor dependent, flagged
  const Instruction jmpw = must_decode(kBase, {0x66, 0xe9, 0x00, 0x01});
  CHECK(jmpw.kind == ControlKind::Jump);
  CHECK(jmpw.operand_size_override);
  CHECK_FALSE(must_decode(kBase, {0xe9, 0xfb, 0x0f, 0x00, 0x00}).operand_size_override);
}

TEST_CASE("decoder: returns", "[decoder]") {
  // ret (c3)
  const Instruction ret = must_decode(kBase, {0xc3});
  CHECK(ret.kind == ControlKind::Return);
  CHECK(ret.size == 1);
  CHECK(ret.stack_adjust == 0);
  CHECK_FALSE(ret.can_fall_through());
  // ret $0x10 (c2 10 00)
  const Instruction ret_imm = must_decode(kBase, {0xc2, 0x10, 0x00});
  CHECK(ret_imm.kind == ControlKind::Return);
  CHECK(ret_imm.size == 3);
  CHECK(ret_imm.stack_adjust == 0x10);
  // rep ret (f3 c3), the old AMD-friendly gcc idiom
  const Instruction rep_ret = must_decode(kBase, {0xf3, 0xc3});
  CHECK(rep_ret.kind == ControlKind::Return);
  CHECK(rep_ret.size == 2);
}

TEST_CASE("decoder: loop family", "[decoder]") {
  struct Case {
    std::initializer_list<uint8_t> bytes;
    LoopOp op;
    uint8_t width;
    uint8_t size;
  };
  const Case cases[] = {
      {{0xe2, 0xfe}, LoopOp::Loop, 8, 2},              // loop .
      {{0xe1, 0xfe}, LoopOp::LoopE, 8, 2},             // loope .
      {{0xe0, 0xfe}, LoopOp::LoopNE, 8, 2},            // loopne .
      {{0xe3, 0xfe}, LoopOp::JumpIfZero, 8, 2},        // jrcxz .
      {{0x67, 0xe3, 0xfe}, LoopOp::JumpIfZero, 4, 3},  // jecxz .+1
      {{0x67, 0xe2, 0xfe}, LoopOp::Loop, 4, 3},        // loopl .+1 (ecx)
  };
  for (const Case& c : cases) {
    const Instruction insn = must_decode(kBase, c.bytes);
    CAPTURE(insn.text);
    CHECK(insn.kind == ControlKind::Loop);
    CHECK(insn.loop_op == c.op);
    CHECK(insn.counter_width == c.width);
    CHECK(insn.size == c.size);
    CHECK(insn.target == kBase + c.size - 2);
    CHECK(insn.can_fall_through());
  }
}

TEST_CASE("decoder: syscalls, interrupts and traps", "[decoder]") {
  // syscall (0f 05)
  const Instruction sc = must_decode(kBase, {0x0f, 0x05});
  CHECK(sc.kind == ControlKind::Syscall);
  CHECK(sc.can_fall_through());
  CHECK_FALSE(sc.kernel_picks_return);
  // sysenter (0f 34)
  const Instruction se = must_decode(kBase, {0x0f, 0x34});
  CHECK(se.kind == ControlKind::Syscall);
  CHECK(se.kernel_picks_return);
  // int $0x80 (cd 80)
  const Instruction i80 = must_decode(kBase, {0xcd, 0x80});
  CHECK(i80.kind == ControlKind::Syscall);
  CHECK(i80.interrupt_vector == 0x80);
  // int3 (cc)
  const Instruction i3 = must_decode(kBase, {0xcc});
  CHECK(i3.kind == ControlKind::Interrupt);
  CHECK(i3.interrupt_vector == 3);
  CHECK(i3.can_fall_through());
  // int1 (f1)
  CHECK(must_decode(kBase, {0xf1}).kind == ControlKind::Interrupt);
  // int $0x29 (cd 29): kernel-only gate, faults
  const Instruction i29 = must_decode(kBase, {0xcd, 0x29});
  CHECK(i29.kind == ControlKind::Interrupt);
  CHECK(i29.interrupt_vector == 0x29);
  CHECK_FALSE(i29.can_fall_through());
  // ud2 (0f 0b), hlt (f4), ud1 %eax,%eax (0f b9 c0), ud0 (0f ff c0)
  for (auto bytes : {std::initializer_list<uint8_t>{0x0f, 0x0b},
                     std::initializer_list<uint8_t>{0xf4},
                     std::initializer_list<uint8_t>{0x0f, 0xb9, 0xc0},
                     std::initializer_list<uint8_t>{0x0f, 0xff, 0xc0}}) {
    const Instruction trap = must_decode(kBase, bytes);
    CAPTURE(trap.text);
    CHECK(trap.kind == ControlKind::Trap);
    CHECK_FALSE(trap.can_fall_through());
  }
  CHECK(must_decode(kBase, {0x0f, 0x0b}).size == 2);
}

TEST_CASE("decoder: far transfers", "[decoder]") {
  // ljmp *(%rax) (ff 28), lcall *(%rax) (ff 18), lretq (48 cb),
  // lret $0x8 (ca 08 00), iretq (48 cf), iretd (cf)
  CHECK(must_decode(kBase, {0xff, 0x28}).kind == ControlKind::FarTransfer);
  CHECK(must_decode(kBase, {0xff, 0x18}).kind == ControlKind::FarTransfer);
  CHECK(must_decode(kBase, {0x48, 0xcb}).kind == ControlKind::FarTransfer);
  const Instruction lret8 = must_decode(kBase, {0xca, 0x08, 0x00});
  CHECK(lret8.kind == ControlKind::FarTransfer);
  CHECK(lret8.stack_adjust == 8);
  const Instruction iretq = must_decode(kBase, {0x48, 0xcf});
  CHECK(iretq.kind == ControlKind::FarTransfer);
  CHECK(iretq.text == "iretq");
  CHECK_FALSE(iretq.can_fall_through());
  CHECK(must_decode(kBase, {0xcf}).kind == ControlKind::FarTransfer);
}

TEST_CASE("decoder: transactional memory is Other", "[decoder]") {
  // xbegin 0x401016 (c7 f8 10 00 00 00)
  const Instruction xbegin = must_decode(kBase, {0xc7, 0xf8, 0x10, 0x00, 0x00, 0x00});
  CHECK(xbegin.kind == ControlKind::Other);
  CHECK(xbegin.target == 0x401016);
  // xend (0f 01 d5), xabort $5 (c6 f8 05)
  CHECK(must_decode(kBase, {0x0f, 0x01, 0xd5}).kind == ControlKind::Other);
  CHECK(must_decode(kBase, {0xc6, 0xf8, 0x05}).kind == ControlKind::Other);
}

TEST_CASE("decoder: non-branches are ControlKind::None", "[decoder]") {
  // endbr64 (f3 0f 1e fa)
  const Instruction endbr = must_decode(kBase, {0xf3, 0x0f, 0x1e, 0xfa});
  CHECK(endbr.kind == ControlKind::None);
  CHECK(endbr.size == 4);
  CHECK(endbr.text == "endbr64");
  // mov %rax,%rbx (48 89 c3)
  const Instruction mov = must_decode(kBase, {0x48, 0x89, 0xc3});
  CHECK(mov.kind == ControlKind::None);
  CHECK(mov.size == 3);
  CHECK(mov.text == "mov rbx, rax");
  CHECK_FALSE(mov.is_control_transfer());
  CHECK(mov.can_fall_through());
  // add %rbx,%rax (48 01 d8), nop (90), rep movsq (f3 48 a5)
  CHECK(must_decode(kBase, {0x48, 0x01, 0xd8}).kind == ControlKind::None);
  CHECK(must_decode(kBase, {0x90}).kind == ControlKind::None);
  CHECK(must_decode(kBase, {0xf3, 0x48, 0xa5}).kind == ControlKind::None);
  // Only the first instruction is decoded: mov then ret
  const Instruction first = must_decode(kBase, {0x48, 0x89, 0xc3, 0xc3});
  CHECK(first.size == 3);
  CHECK(first.kind == ControlKind::None);
}

TEST_CASE("decoder: invalid or truncated encodings give nullopt", "[decoder]") {
  CHECK_FALSE(decode_at(kBase, {0x06}).has_value());        // push %es: invalid in 64-bit
  CHECK_FALSE(decode_at(kBase, {0xea, 0, 0, 0, 0, 0x10, 0}).has_value());  // ljmp ptr16:32
  CHECK_FALSE(decode_at(kBase, {0xf0, 0x0f, 0x05}).has_value());  // lock syscall
  CHECK_FALSE(decode_at(kBase, {0xff}).has_value());        // truncated modrm
  CHECK_FALSE(decode_at(kBase, {0xe8, 0x00, 0x00}).has_value());  // truncated rel32
  CHECK_FALSE(decode_at(kBase, {}).has_value());
}

TEST_CASE("decoder: decoding through a CodeReader near the end of a mapping",
          "[decoder]") {
  auto dec = make_decoder();
  // 16-byte mapping at 0x7000: nops, then `ret` as the last byte, and a
  // second reader whose last 3 bytes are a truncated `call`.
  std::vector<uint8_t> bytes(16, 0x90);
  bytes[15] = 0xc3;
  RecordingReader reader(0x7000, bytes);

  const auto nop = dec.decode(0x7000, reader);
  REQUIRE(nop.has_value());
  CHECK(nop->size == 1);
  CHECK(reader.last_request == decoder::kMaxInstructionSize);

  const auto ret = dec.decode(0x700f, reader);  // only 1 byte is readable
  REQUIRE(ret.has_value());
  CHECK(ret->kind == ControlKind::Return);
  CHECK(ret->address == 0x700f);

  std::vector<uint8_t> cut(16, 0x90);
  cut[13] = 0xe8;  // call rel32 with only 2 of its 4 displacement bytes
  cut[14] = 0x00;
  cut[15] = 0x00;
  RecordingReader truncated(0x8000, cut);
  CHECK_FALSE(dec.decode(0x800d, truncated).has_value());
  CHECK_FALSE(dec.decode(0x8010, truncated).has_value());  // past the end
  CHECK_FALSE(dec.decode(0x7fff, truncated).has_value());  // before the start

  // The same call fully mapped decodes.
  cut.insert(cut.end(), {0x00, 0x00});
  RecordingReader whole(0x8000, cut);
  const auto call = dec.decode(0x800d, whole);
  REQUIRE(call.has_value());
  CHECK(call->kind == ControlKind::Call);
  CHECK(call->target == 0x8012);
}

TEST_CASE("decoder: InstructionDecoder is movable", "[decoder]") {
  auto first = make_decoder();
  decoder::InstructionDecoder second(std::move(first));
  const uint8_t ret[] = {0xc3};
  CHECK(second.decode(kBase, ret, 1).has_value());
  CHECK_FALSE(first.decode(kBase, ret, 1).has_value());  // moved-from is inert
  auto third = make_decoder();
  third = std::move(second);
  CHECK(third.decode(kBase, ret, 1).has_value());
}

}  // namespace test_decoder_classify
