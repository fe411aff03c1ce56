#include "decoder/cache_code_writer.h"

#include <cstring>

namespace decoder {

namespace {
constexpr uint8_t kGs = 0x65;
constexpr uint8_t kRexW = 0x48;
}  // namespace

void CacheCodeWriter::u32(uint32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  raw(b, 4);
}

void CacheCodeWriter::u64(uint64_t v) {
  uint8_t b[8];
  std::memcpy(b, &v, 8);
  raw(b, 8);
}

// 65 48 <opcode> <modrm: 00 reg 100> <sib 0x25: no base, no index> disp32
void CacheCodeWriter::slot_move(uint8_t opcode, Scratch reg, int32_t slot) {
  bytes({kGs, kRexW, opcode, static_cast<uint8_t>(0x04 | (static_cast<uint8_t>(reg) << 3)), 0x25});
  u32(static_cast<uint32_t>(slot));
}

void CacheCodeWriter::table_index_into_rcx(int32_t slot) {
  bytes({kGs, 0x0f, 0xb7, 0x0c, 0x25});  // movzwl %gs:slot, %ecx
  u32(static_cast<uint32_t>(slot));
  bytes({kGs, 0x0f, 0xb7, 0x04, 0x25});  // movzwl %gs:slot+2, %eax
  u32(static_cast<uint32_t>(slot + 2));
  bytes({0x8d, 0x0c, 0x01, 0x0f, 0xb7, 0xc9, 0x48, 0x8d, 0x0c, 0x09});
}

void CacheCodeWriter::store_slot(Scratch reg, int32_t slot) { slot_move(0x89, reg, slot); }
void CacheCodeWriter::load_slot(Scratch reg, int32_t slot) { slot_move(0x8b, reg, slot); }

void CacheCodeWriter::movabs(unsigned reg, uint64_t value) {
  bytes({static_cast<uint8_t>(kRexW | (reg >> 3)), static_cast<uint8_t>(0xb8 + (reg & 7))});
  u64(value);
}

// 65 48 0f c3 /r (movnti) or 65 48 89 /r (mov); ModRM 00 reg 001 (rcx),
// or 01 reg 001 with a disp8.
void CacheCodeWriter::store_at_rcx(unsigned reg, int8_t disp, bool non_temporal) {
  const uint8_t r = static_cast<uint8_t>((reg & 7) << 3);
  if (non_temporal) {
    bytes({kGs, kRexW, 0x0f, 0xc3});
  } else {
    bytes({kGs, kRexW, 0x89});
  }
  if (disp == 0) {
    bytes({static_cast<uint8_t>(0x01 | r)});
  } else {
    bytes({static_cast<uint8_t>(0x41 | r), static_cast<uint8_t>(disp)});
  }
}

// 65 0f 0d /1, ModRM 10 001 001: disp32(%rcx).
void CacheCodeWriter::prefetchw_at_rcx(int32_t disp) {
  bytes({kGs, 0x0f, 0x0d, 0x89});
  u32(static_cast<uint32_t>(disp));
}

// 48 8d 84 24 disp32: lea disp32(%rsp), %rax (a SIB byte: rsp as base).
void CacheCodeWriter::rsp_into_rax(int32_t disp) {
  bytes({kRexW, 0x8d, 0x84, 0x24});
  u32(static_cast<uint32_t>(disp));
}

void CacheCodeWriter::add_to_rcx(int8_t disp) { bytes({kRexW, 0x8d, 0x49, static_cast<uint8_t>(disp)}); }

void CacheCodeWriter::pop_into_rax(int32_t disp) {
  bytes({kRexW, 0x8b, 0x04, 0x24});        // mov (%rsp), %rax
  bytes({kRexW, 0x8d, 0xa4, 0x24});        // lea disp32(%rsp), %rsp
  u32(static_cast<uint32_t>(disp));
}

void CacheCodeWriter::load_rcx_at_gs_rcx8(int32_t disp) {
  bytes({kGs, kRexW, 0x8b, 0x0c, 0xcd});  // SIB: scale 8, index rcx, no base
  u32(static_cast<uint32_t>(disp));
}

void CacheCodeWriter::jmp_slot(int32_t slot) {
  bytes({kGs, 0xff, 0x24, 0x25});  // jmp r/m64, SIB: absolute disp32
  u32(static_cast<uint32_t>(slot));
}

std::size_t CacheCodeWriter::jmp_rel32() {
  bytes({0xe9});
  u32(0);
  return offset() - 4;
}

std::size_t CacheCodeWriter::jmp_rel8() {
  bytes({0xeb, 0x00});
  return offset() - 1;
}

std::size_t CacheCodeWriter::jrcxz_rel8() {
  bytes({0xe3, 0x00});
  return offset() - 1;
}

bool CacheCodeWriter::patch_rel8(std::size_t field, std::size_t to_offset) {
  const int64_t delta = static_cast<int64_t>(to_offset) - static_cast<int64_t>(field + 1);
  if (delta < INT8_MIN || delta > INT8_MAX) return false;
  code_[field] = static_cast<uint8_t>(static_cast<int8_t>(delta));
  return true;
}

bool CacheCodeWriter::patch_rel32_to(std::size_t field, uint64_t to_address) {
  const int64_t delta = static_cast<int64_t>(to_address - (base_ + field + 4));
  if (delta < INT32_MIN || delta > INT32_MAX) return false;
  const int32_t rel = static_cast<int32_t>(delta);
  std::memcpy(code_.data() + field, &rel, 4);
  return true;
}

}  // namespace decoder
