#include "decoder/instruction_history.h"
#include "protocol/hex_text.h"

#include <algorithm>
#include <string>

namespace decoder {
namespace {

using btstub::ErrorCode;
using btstub::make_error;

using protocol::hex;

btstub::Error block_error(const Block& block, const std::string& why) {
  return make_error(ErrorCode::InvalidArgument,
                    "block " + hex(block.begin) + ".." + hex(block.end) + ": " + why);
}

bool is_evex_legal_prefix(uint8_t byte) {
  return byte == 0x67 || byte == 0x64 || byte == 0x65 || byte == 0x2e || byte == 0x3e || byte == 0x26 ||
         byte == 0x36;
}

// Map-1 (0F) EVEX opcodes that carry an imm8 (shifts by immediate, pshuf*,
// cmpps/cmppd, pinsrw/pextrw, shufps/shufpd); map 3 (0F3A) always has one.
bool map1_has_imm8(uint8_t opcode) {
  return (opcode >= 0x70 && opcode <= 0x73) || opcode == 0xc2 || (opcode >= 0xc4 && opcode <= 0xc6);
}

// Length of an instruction whose ModRM byte is at `at`: ModRM, SIB and
// displacement (64-bit and 32-bit addressing share these rules).
std::optional<std::size_t> after_modrm(const uint8_t* bytes, std::size_t len, std::size_t at) {
  if (at >= len) return std::nullopt;
  const uint8_t modrm = bytes[at];
  std::size_t n = at + 1;
  const uint8_t mod = modrm >> 6, rm = modrm & 7;
  if (mod == 3) return n;
  if (rm == 4) {  // SIB
    if (n >= len) return std::nullopt;
    const uint8_t base = bytes[n] & 7;
    ++n;
    if (mod == 0 && base == 5) n += 4;
  } else if (mod == 0 && rm == 5) {
    n += 4;  // RIP-relative disp32
  }
  if (mod == 1) n += 1;  // disp8 (EVEX scales it; the length is the same)
  if (mod == 2) n += 4;
  return n;
}

}  // namespace

std::optional<VexForm> vex_form(const uint8_t* bytes, std::size_t len) {
  std::size_t i = 0;
  while (i < len && i < 4 && is_evex_legal_prefix(bytes[i])) ++i;
  if (i >= len) return std::nullopt;
  // Escape and payload: 62 P0 P1 P2 (map in P0), C4 RXBm WvLp (map in byte
  // 1), C5 RvLp (map 1). Then opcode and ModRM.
  std::size_t payload = 0;
  uint8_t map = 1;
  switch (bytes[i]) {
    case 0x62: payload = 3; break;
    case 0xc4: payload = 2; break;
    case 0xc5: payload = 1; break;
    default: return std::nullopt;
  }
  if (i + payload + 3 > len) return std::nullopt;
  if (bytes[i] == 0x62) map = bytes[i + 1] & 0x07;
  if (bytes[i] == 0xc4) map = bytes[i + 1] & 0x1f;
  if (map == 0 || map == 4 || map > 6) return std::nullopt;  // reserved maps
  const uint8_t opcode = bytes[i + payload + 1];
  const std::size_t modrm_at = i + payload + 2;
  auto n = after_modrm(bytes, len, modrm_at);
  if (!n) return std::nullopt;
  if (map == 3 || (map == 1 && map1_has_imm8(opcode))) ++*n;
  if (*n > len || *n > kMaxInstructionSize) return std::nullopt;
  return VexForm{*n, i, modrm_at};
}

std::optional<std::size_t> evex_length(const uint8_t* bytes, std::size_t len) {
  auto form = vex_form(bytes, len);
  if (!form) return std::nullopt;
  return form->size;
}

std::optional<std::size_t> hint_nop_length(const uint8_t* bytes, std::size_t len) {
  std::size_t i = 0;
  while (i < len && i < 4 && (bytes[i] == 0x66 || bytes[i] == 0xf2 || bytes[i] == 0xf3 || is_evex_legal_prefix(bytes[i]))) {
    ++i;
  }
  if (i < len && (bytes[i] & 0xf0) == 0x40) ++i;  // REX
  if (i + 3 > len || bytes[i] != 0x0f || bytes[i + 1] < 0x18 || bytes[i + 1] > 0x1f) return std::nullopt;
  auto n = after_modrm(bytes, len, i + 2);
  if (!n || *n > len || *n > kMaxInstructionSize) return std::nullopt;
  return n;
}

std::optional<Instruction> decode_with_fallback(InstructionDecoder& decoder, uint64_t addr,
                                                const uint8_t* bytes, std::size_t len) {
  if (auto insn = decoder.decode(addr, bytes, len)) return insn;
  const std::size_t n = std::min(len, kMaxInstructionSize);
  auto size = evex_length(bytes, n);
  if (!size) size = hint_nop_length(bytes, n);
  if (!size) return std::nullopt;
  Instruction insn;
  insn.address = addr;
  insn.size = static_cast<uint8_t>(*size);
  insn.text = "(not known to capstone)";
  return insn;
}

std::optional<Instruction> decode_with_fallback(InstructionDecoder& decoder, uint64_t addr, CodeReader& code) {
  uint8_t buffer[kMaxInstructionSize];
  const std::size_t n = code.read(addr, buffer, sizeof buffer);
  if (n == 0) return std::nullopt;
  return decode_with_fallback(decoder, addr, buffer, n);
}

btstub::Expected<std::vector<uint64_t>> block_instructions(InstructionDecoder& decoder,
                                                           CodeReader& code, const Block& block) {
  if (block.end < block.begin) return block_error(block, "ends before it begins");
  if (block.end - block.begin > kMaxBlockBytes) return block_error(block, "implausibly long");
  std::vector<uint64_t> out;
  uint64_t addr = block.begin;
  for (;;) {
    auto insn = decode_with_fallback(decoder, addr, code);
    if (!insn) return block_error(block, "cannot decode the instruction at " + hex(addr));
    out.push_back(addr);
    if (addr == block.end) return out;
    // Only a not-taken transfer may sit inside a block; anything that always
    // leaves (jmp, call, ret) means the trace missed a branch.
    if (!insn->can_fall_through()) {
      return block_error(block, "'" + insn->text + "' at " + hex(addr) + " cannot fall through");
    }
    addr = insn->next_address();
    if (addr > block.end || addr < block.begin) {
      return block_error(block, "decoding overshoots the end (next instruction at " + hex(addr) + ")");
    }
  }
}

btstub::Expected<std::vector<uint64_t>> instruction_history(InstructionDecoder& decoder,
                                                            CodeReader& code,
                                                            const std::vector<Block>& blocks) {
  std::vector<uint64_t> out;
  for (const Block& block : blocks) {
    auto addrs = block_instructions(decoder, code, block);
    if (!addrs) return addrs.error();
    out.insert(out.end(), addrs->begin(), addrs->end());
  }
  return out;
}

}  // namespace decoder
