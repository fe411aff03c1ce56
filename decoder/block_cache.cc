#include "decoder/block_cache.h"

#include "decoder/instruction_history.h"

namespace decoder {
namespace {

ReplayInstruction reduce(const Instruction& insn) {
  return ReplayInstruction{insn.address, insn.size, insn.kind, insn.target, insn.stack};
}

}  // namespace

const DecodedBlock& BlockCache::get(const Block& block) {
  auto it = blocks_.find(block);
  if (it != blocks_.end()) return it->second;
  return blocks_.emplace(block, decode(block)).first->second;
}

std::optional<ReplayInstruction> BlockCache::instruction_at(uint64_t addr) {
  auto insn = decoder_.decode(addr, code_);
  if (!insn) return std::nullopt;
  return reduce(*insn);
}

// Same acceptance rules as instruction_history's block_instructions: only a
// transfer that can fall through may sit inside a block, and VEX/EVEX
// encodings Capstone 4 does not know (glibc's AVX-512 string functions)
// still decode, as ordinary instructions.
DecodedBlock BlockCache::decode(const Block& block) {
  DecodedBlock out;
  if (block.end < block.begin || block.end - block.begin > kMaxBlockBytes) return out;
  uint64_t addr = block.begin;
  for (;;) {
    auto insn = decode_with_fallback(decoder_, addr, code_);
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

}  // namespace decoder
