#include <catch2/catch.hpp>

#include <vector>

#include "decoder/instruction_history.h"

namespace test_instruction_history {  // this file's own names, apart in a unity build

using decoder::Block;

namespace {

constexpr uint64_t kBase = 0x401000;
// 0x401000: 48 89 c8        mov rax, rcx
// 0x401003: 48 ff c9        dec rcx
// 0x401006: 75 f8           jne 0x401000
// 0x401008: 90              nop
// 0x401009: e8 02 00 00 00  call 0x401010
// 0x40100e: 0f 05           syscall
// 0x401010: c3              ret
const std::vector<uint8_t> kCode = {0x48, 0x89, 0xc8, 0x48, 0xff, 0xc9, 0x75, 0xf8, 0x90,
                                    0xe8, 0x02, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3};

struct Fixture {
  decoder::InstructionDecoder decoder = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code{kBase, kCode.data(), kCode.size()};
};

}  // namespace

TEST_CASE("instruction_history expands blocks through not-taken branches") {
  Fixture f;
  // Loop taken once, then falls through into the call.
  std::vector<Block> blocks = {{0x401000, 0x401006}, {0x401000, 0x401009}, {0x401010, 0x401010}};
  auto history = decoder::instruction_history(f.decoder, f.code, blocks);
  REQUIRE(history.ok());
  REQUIRE(*history == std::vector<uint64_t>{0x401000, 0x401003, 0x401006, 0x401000, 0x401003,
                                            0x401006, 0x401008, 0x401009, 0x401010});
}

TEST_CASE("a block may run through a syscall and end on one instruction") {
  Fixture f;
  auto one = decoder::block_instructions(f.decoder, f.code, {0x40100e, 0x401010});
  REQUIRE(one.ok());
  REQUIRE(*one == std::vector<uint64_t>{0x40100e, 0x401010});
  auto single = decoder::block_instructions(f.decoder, f.code, {0x401008, 0x401008});
  REQUIRE(single.ok());
  REQUIRE(*single == std::vector<uint64_t>{0x401008});
}

TEST_CASE("a block whose end is not an instruction boundary is an error") {
  Fixture f;
  auto r = decoder::block_instructions(f.decoder, f.code, {0x401000, 0x401004});
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.error().message.find("overshoots") != std::string::npos);
}

TEST_CASE("a block running through an unconditional transfer is an error") {
  Fixture f;
  auto r = decoder::block_instructions(f.decoder, f.code, {0x401008, 0x40100e});
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.error().message.find("cannot fall through") != std::string::npos);
}

TEST_CASE("undecodable, reversed and absurd blocks are errors") {
  Fixture f;
  REQUIRE_FALSE(decoder::block_instructions(f.decoder, f.code, {0x500000, 0x500000}).ok());
  REQUIRE_FALSE(decoder::block_instructions(f.decoder, f.code, {0x401008, 0x401000}).ok());
  REQUIRE_FALSE(decoder::block_instructions(f.decoder, f.code, {0x401000, 0x401000 + (1ull << 30)}).ok());
  // One bad block spoils the whole history rather than silently shortening it.
  std::vector<Block> blocks = {{0x401000, 0x401006}, {0x401000, 0x401004}};
  REQUIRE_FALSE(decoder::instruction_history(f.decoder, f.code, blocks).ok());
}

TEST_CASE("EVEX instructions Capstone 4 does not know still get their length") {
  // glibc's __strrchr_evex: vptestnmb k0, ymm19, ymm19 (62 b2 66 20 26 c3),
  // then kmovd ecx, k0 (c5 fb 93 c8).
  const std::vector<uint8_t> code = {0x62, 0xb2, 0x66, 0x20, 0x26, 0xc3, 0xc5, 0xfb, 0x93, 0xc8};
  REQUIRE(decoder::evex_length(code.data(), code.size()) == 6u);
  // Memory forms: SIB + disp8; RIP-relative disp32; map 3 with an imm8.
  const uint8_t sib_disp8[] = {0x62, 0xf1, 0x7d, 0x48, 0x6f, 0x44, 0x24, 0x01};
  REQUIRE(decoder::evex_length(sib_disp8, sizeof sib_disp8) == 8u);
  const uint8_t rip_rel[] = {0x62, 0xf1, 0x7d, 0x48, 0x6f, 0x05, 1, 2, 3, 4};
  REQUIRE(decoder::evex_length(rip_rel, sizeof rip_rel) == 10u);
  const uint8_t map3_imm[] = {0x62, 0xf3, 0x7d, 0x48, 0x3e, 0xc1, 0x04};
  REQUIRE(decoder::evex_length(map3_imm, sizeof map3_imm) == 7u);
  REQUIRE_FALSE(decoder::evex_length(map3_imm, 6).has_value());  // truncated
  const uint8_t not_evex[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
  REQUIRE_FALSE(decoder::evex_length(not_evex, sizeof not_evex).has_value());

  auto dec = decoder::InstructionDecoder::create().value();
  decoder::BufferReader reader(0x2000, code.data(), code.size());
  auto insns = decoder::block_instructions(dec, reader, {0x2000, 0x2006});
  REQUIRE(insns.ok());
  REQUIRE(*insns == std::vector<uint64_t>{0x2000, 0x2006});
  REQUIRE(decoder::block_instructions(dec, reader, {0x2000, 0x2009}).ok() == false);  // mid-instruction
}

TEST_CASE("VEX mask instructions Capstone 4 does not know get their length too") {
  const uint8_t kmovd[] = {0xc5, 0xfb, 0x93, 0xc8};               // kmovd ecx, k0
  REQUIRE(decoder::evex_length(kmovd, sizeof kmovd) == 4u);
  const uint8_t kmovq_mem[] = {0xc4, 0xe1, 0xf8, 0x90, 0x44, 0x24, 0x08};  // kmovq k0, [rsp+8]
  REQUIRE(decoder::evex_length(kmovq_mem, sizeof kmovq_mem) == 7u);
  const uint8_t vpalignr[] = {0xc4, 0xe3, 0x7d, 0x0f, 0xc1, 0x01};  // map 3: imm8
  REQUIRE(decoder::evex_length(vpalignr, sizeof vpalignr) == 6u);
}

TEST_CASE("hint-space NOPs Capstone 4 does not know (rdsspq) get their length") {
  const uint8_t rdsspq[] = {0xf3, 0x48, 0x0f, 0x1e, 0xc8, 0x48, 0x85, 0xc0};  // rdsspq rax; test rax, rax
  REQUIRE(decoder::hint_nop_length(rdsspq, sizeof rdsspq) == 5u);
  const uint8_t nop_mem[] = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00};  // nop word [rax+rax+0]
  REQUIRE(decoder::hint_nop_length(nop_mem, sizeof nop_mem) == 6u);
  const uint8_t not_hint[] = {0x0f, 0x05, 0x90};  // syscall
  REQUIRE_FALSE(decoder::hint_nop_length(not_hint, sizeof not_hint).has_value());
  auto dec = decoder::InstructionDecoder::create().value();
  auto insn = decoder::decode_with_fallback(dec, 0x3000, rdsspq, sizeof rdsspq);
  REQUIRE(insn.has_value());
  REQUIRE(insn->size == 5);
  REQUIRE_FALSE(insn->is_control_transfer());
}

}  // namespace test_instruction_history
