#pragma once
// Turns a branch trace's blocks back into the instructions that ran: each
// block is decoded from `begin` forward until `end`. A block that does not
// land exactly on its end (decoding overshoots it, hits undecodable bytes,
// or meets an unconditional transfer before it) means the trace and the code
// disagree, and is reported as an error rather than guessed at.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"
#include "protocol/expected.h"

namespace decoder {

// A block longer than this many bytes is rejected: straight-line code that
// long does not exist, so such a block is a corrupt trace, and refusing it
// keeps a bad `end` from making us decode the whole address space.
inline constexpr uint64_t kMaxBlockBytes = 16 * 1024 * 1024;

// Capstone 4 does not know every EVEX (AVX-512) or VEX (e.g. kmovd) encoding,
// and glibc's string functions use them on CPUs that have them. No VEX/EVEX
// instruction transfers control, so when Capstone gives up on one its length
// is computed here and it stands as an ordinary instruction (kind None).
// nullopt: neither VEX nor EVEX, or truncated.
std::optional<std::size_t> evex_length(const uint8_t* bytes, std::size_t len);
// The layout evex_length reads: the legacy prefixes are bytes[0, prefixes),
// the ModRM byte is at modrm_at (a RIP-relative disp32 follows it).
struct VexForm {
  std::size_t size = 0;
  std::size_t prefixes = 0;
  std::size_t modrm_at = 0;
};
std::optional<VexForm> vex_form(const uint8_t* bytes, std::size_t len);
// The same for the 0F 18..1F hint space (NOPs on CPUs without the feature:
// rdsspq, the CET shadow-stack reads libgcc's unwinder uses, and friends).
std::optional<std::size_t> hint_nop_length(const uint8_t* bytes, std::size_t len);
// InstructionDecoder::decode with both fallbacks.
std::optional<Instruction> decode_with_fallback(InstructionDecoder& decoder, uint64_t addr,
                                                const uint8_t* bytes, std::size_t len);
std::optional<Instruction> decode_with_fallback(InstructionDecoder& decoder, uint64_t addr, CodeReader& code);

// Addresses of the instructions of one block, `begin` through `end` inclusive.
btstub::Expected<std::vector<uint64_t>> block_instructions(InstructionDecoder& decoder,
                                                           CodeReader& code, const Block& block);

// The concatenated instruction addresses of `blocks`, oldest first.
btstub::Expected<std::vector<uint64_t>> instruction_history(InstructionDecoder& decoder,
                                                            CodeReader& code,
                                                            const std::vector<Block>& blocks);

}  // namespace decoder
