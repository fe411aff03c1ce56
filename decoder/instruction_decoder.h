#pragma once
// Capstone-backed x86-64 decoder. Capstone types stay out of this header so
// users of decoder/ need not include Capstone themselves.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/code_reader.h"
#include "decoder/instruction.h"
#include "decoder/instruction_footprint.h"
#include "decoder/registers.h"
#include "protocol/expected.h"

struct cs_insn;

namespace decoder {

inline constexpr std::size_t kMaxInstructionSize = 15;

class InstructionDecoder {
 public:
  // Opens Capstone (x86, 64-bit, detail on). Fails only if Capstone cannot
  // be initialised (out of memory, library built without x86).
  static btstub::Expected<InstructionDecoder> create();

  InstructionDecoder(const InstructionDecoder&) = delete;
  InstructionDecoder& operator=(const InstructionDecoder&) = delete;
  InstructionDecoder(InstructionDecoder&& other) noexcept;
  InstructionDecoder& operator=(InstructionDecoder&& other) noexcept;
  ~InstructionDecoder();

  // Decodes the instruction at `addr`, reading up to 15 bytes through
  // `code`. A short read (end of a mapping) is fine as long as the
  // instruction fits. nullopt: unreadable, truncated or invalid encoding.
  std::optional<Instruction> decode(uint64_t addr, CodeReader& code);
  // Same, from bytes already in hand (`bytes[0]` is at `addr`).
  std::optional<Instruction> decode(uint64_t addr, const uint8_t* bytes,
                                    std::size_t len);
  // Every memory range the instruction at `addr` may read or write, given
  // the registers before it runs (decoder/instruction_footprint.h).
  // nullopt: undecodable, or not undoable by restoring registers and the
  // written ranges.
  std::optional<std::vector<MemoryTouch>> footprint(uint64_t addr, const uint8_t* bytes,
                                                    std::size_t len,
                                                    const RegisterSource& regs);

 private:
  InstructionDecoder(std::size_t handle, cs_insn* insn)
      : handle_(handle), insn_(insn) {}
  void release();

  std::size_t handle_ = 0;  // Capstone's csh
  cs_insn* insn_ = nullptr; // reused by every decode (cs_malloc)
};

}  // namespace decoder
