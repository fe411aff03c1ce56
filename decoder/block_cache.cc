#include "decoder/block_cache.h"

#include "decoder/instruction_history.h"
#include "decoder/pt_decoder.h"

#include <algorithm>

namespace decoder {
namespace {

ReplayInstruction reduce(const Instruction& insn) {
  return ReplayInstruction{insn.address, insn.size, insn.kind, insn.target, insn.stack};
}

}  // namespace

const DecodedBlock& BlockCache::get(const Block& block) {
  auto it = blocks_.find(block);
  if (it == blocks_.end()) return blocks_.emplace(block, decoded_entry(block)).first->second.block;
  Entry& entry = it->second;
  if (entry.checked != generation_) {
    if (!holds_bytes(entry)) entry = decoded_entry(block);
    entry.checked = generation_;
  }
  return entry.block;
}

void BlockCache::use_reader(CodeReader& code) {
  code_ = &code;
  ++generation_;
  if (blocks_.size() >= kMaxKeptBlocks) blocks_.clear();
}

BlockCache::Entry BlockCache::decoded_entry(const Block& block) {
  Entry entry;
  entry.block = decode(block);
  entry.checked = generation_;
  // An incomplete block keeps no bytes: what stopped its decoding (code
  // that could not be read) is not in them, so it is decoded again.
  // Nor does a long one (bounds the kept bytes; straight-line code that
  // long is rare and costs only its decoding again). A cache that never
  // changes readers (generation 0) never checks them, so keeps none.
  const bool keep = generation_ > 0 && entry.block.complete && !entry.block.instructions.empty() &&
                    entry.block.instructions.back().next_address() - block.begin <= kMaxKeptBlockBytes;
  if (keep) {
    entry.bytes.resize(entry.block.instructions.back().next_address() - block.begin);
    if (code_->read(block.begin, entry.bytes.data(), entry.bytes.size()) != entry.bytes.size()) entry.bytes.clear();
  }
  return entry;
}

// An instruction's decoding depends on its own bytes only, so equal bytes
// decode to the same block.
bool BlockCache::holds_bytes(const Entry& entry) {
  if (entry.bytes.empty()) return false;
  scratch_.resize(entry.bytes.size());
  const uint64_t begin = entry.block.instructions.front().address;
  return code_->read(begin, scratch_.data(), scratch_.size()) == scratch_.size() && scratch_ == entry.bytes;
}

std::optional<ReplayInstruction> BlockCache::instruction_at(uint64_t addr) {
  auto insn = decoder_.decode(addr, *code_);
  if (!insn) return std::nullopt;
  return reduce(*insn);
}

// Same acceptance rules as instruction_history's block_instructions: only a
// transfer that can fall through may sit inside a block, and VEX/EVEX
// encodings Capstone 4 does not know (glibc's AVX-512 string functions)
// still decode, as ordinary instructions.
DecodedBlock BlockCache::decode(const Block& block) { return decode_block(decoder_, *code_, block); }

DecodedBlock decode_block(InstructionDecoder& decoder, CodeReader& code, const Block& block) {
  DecodedBlock out;
  if (block.end < block.begin || block.end - block.begin > kMaxBlockBytes) return out;
  uint64_t addr = block.begin;
  for (;;) {
    auto insn = decode_with_fallback(decoder, addr, code);
    if (!insn) return out;
    out.instructions.push_back(reduce(*insn));
    if (addr == block.end) {
      out.complete = true;
      return out;
    }
    if (!insn->can_fall_through()) return out;
    addr = insn->next_address();
    if (addr > block.end || addr < block.begin) return out;
  }
}

std::optional<uint64_t> layout_hash(const DecodedBlock& block) {
  if (!block.complete || block.instructions.empty()) return std::nullopt;
  uint64_t hash = kCodeHashStart;
  auto mix = [&hash](uint64_t value) { hash = code_hash(hash, reinterpret_cast<const uint8_t*>(&value), 8); };
  for (const ReplayInstruction& insn : block.instructions) {
    const StackEffect& s = insn.stack;
    mix(insn.address);
    mix(uint64_t{insn.size} | uint64_t{static_cast<uint8_t>(insn.kind)} << 8 | uint64_t{insn.target.has_value()} << 16 |
        uint64_t{static_cast<uint8_t>(s.op)} << 24 | uint64_t{s.pushes_rbp} << 32 | uint64_t{s.clobbers_rsp} << 33 |
        uint64_t{s.clobbers_rbp} << 34 | uint64_t{s.pushed_value.has_value()} << 35);
    mix(insn.target.value_or(0));
    mix(static_cast<uint64_t>(s.value));
    mix(s.pushed_value.value_or(0));
  }
  return hash;
}

}  // namespace decoder
