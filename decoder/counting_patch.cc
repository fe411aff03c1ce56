#include "decoder/counting_patch.h"

#include <capstone/capstone.h>

#include <cstring>
#include <optional>
#include <string>

#include "decoder/capstone_detail.h"

namespace decoder {
namespace {

using btstub::ErrorCode;
using btstub::make_error;

constexpr std::size_t kJmpRel32Size = 5;
constexpr uint64_t kCounterOffset = 0;
constexpr uint64_t kReturnSlotsOffset = 8;  // one 8-byte slot per relocated call
constexpr std::size_t kMaxReturnSlots = 7;
constexpr uint64_t kCodeOffset = 64;

btstub::Error refuse(const std::string& why) { return make_error(ErrorCode::NotSupported, why); }

void put32(std::vector<uint8_t>& out, int32_t value) {
  uint8_t bytes[4];
  std::memcpy(bytes, &value, 4);
  out.insert(out.end(), bytes, bytes + 4);
}

// Writes the trampoline's code at page_address + kCodeOffset.
class TrampolineWriter {
 public:
  TrampolineWriter(uint64_t page_address, std::vector<uint8_t>& page) : base_(page_address), page_(page) {}

  uint64_t here() const { return base_ + kCodeOffset + code_.size(); }

  // An instruction of `size` bytes whose last four (from `rel_at`) are a
  // rel32 to `to`.
  bool emit_with_rel32(std::vector<uint8_t> head, uint64_t to) {
    auto rel = rel32(here() + head.size() + 4, to);
    if (!rel) return false;
    put32(head, *rel);
    code_.insert(code_.end(), head.begin(), head.end());
    return true;
  }
  void emit(const uint8_t* bytes, std::size_t n) { code_.insert(code_.end(), bytes, bytes + n); }

  // xchg [rip + counter], rcx: swaps the count and the program's rcx
  // without touching flags or the stack.
  bool swap_counter() { return emit_with_rel32({0x48, 0x87, 0x0d}, base_ + kCounterOffset); }

  void finish() {
    std::memcpy(page_.data() + kCodeOffset, code_.data(), code_.size());
  }
  std::size_t size() const { return code_.size(); }

 private:
  uint64_t base_;
  std::vector<uint8_t>& page_;
  std::vector<uint8_t> code_;
};

// The jcc's condition code (the low nibble of its opcode).
std::optional<uint8_t> jcc_condition(const cs_x86& x86) {
  if (x86.opcode[0] >= 0x70 && x86.opcode[0] <= 0x7f) return x86.opcode[0] & 0x0f;
  if (x86.opcode[0] == 0x0f && x86.opcode[1] >= 0x80 && x86.opcode[1] <= 0x8f) return x86.opcode[1] & 0x0f;
  return std::nullopt;
}

// Transfers the trampoline cannot repeat elsewhere (system calls, traps,
// far and rcx-counting branches with no rel32 form, transactions).
bool cannot_move(csh handle, const cs_insn& insn) {
  if (in_group(handle, insn, CS_GRP_INT) || in_group(handle, insn, CS_GRP_IRET)) return true;
  switch (insn.id) {
    case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_HLT:
    case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
    case X86_INS_JRCXZ: case X86_INS_JECXZ: case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
    case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_XBEGIN:
      return true;
    default:
      return false;
  }
}

const cs_x86_op* rip_relative_operand(const cs_x86& x86) {
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    if (x86.operands[i].type == X86_OP_MEM && x86.operands[i].mem.base == X86_REG_RIP) return &x86.operands[i];
  }
  return nullptr;
}


// Moves the instructions under the jmp into the trampoline, one by one.
class InstructionMover {
 public:
  InstructionMover(csh handle, TrampolineWriter& w, CountingPatch& out) : handle_(handle), w_(w), out_(out) {}

  btstub::Expected<void> move(const cs_insn& insn) {
    const cs_x86& x86 = insn.detail->x86;
    const bool relative = x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM;
    const uint64_t to = relative ? static_cast<uint64_t>(x86.operands[0].imm) : 0;
    bool reached = true;
    if (cannot_move(handle_, insn)) {
      return refuse(std::string("a ") + insn.mnemonic + " near the breakpoint cannot be moved");
    } else if (in_group(handle_, insn, CS_GRP_CALL)) {
      if (!relative || slots_ == kMaxReturnSlots) return refuse("an indirect call near the breakpoint");
      // push qword [rip + slot] (the original return address); jmp target.
      const uint64_t slot = out_.page_address + kReturnSlotsOffset + 8 * slots_++;
      const uint64_t return_address = insn.address + insn.size;
      std::memcpy(out_.page.data() + (slot - out_.page_address), &return_address, 8);
      reached = w_.emit_with_rel32({0xff, 0x35}, slot) && w_.emit_with_rel32({0xe9}, to);
    } else if (in_group(handle_, insn, CS_GRP_JUMP) && relative) {
      auto cc = jcc_condition(x86);
      if (insn.id != X86_INS_JMP && !cc) return refuse(std::string("a ") + insn.mnemonic + " near the breakpoint");
      reached = insn.id == X86_INS_JMP ? w_.emit_with_rel32({0xe9}, to)
                                       : w_.emit_with_rel32({0x0f, static_cast<uint8_t>(0x80 | *cc)}, to);
    } else if (const cs_x86_op* mem = rip_relative_operand(x86)) {
      return move_rip_relative(insn, *mem);
    } else {
      // Anything else (ret and indirect jmp included) does not depend on
      // where it runs.
      w_.emit(insn.bytes, insn.size);
    }
    if (!reached) return refuse("a branch target out of the trampoline's reach");
    return {};
  }

  // What the moved instructions read or write by RIP-relative addresses.
  const std::vector<uint64_t>& rip_reads() const { return rip_reads_; }

 private:
  btstub::Expected<void> move_rip_relative(const cs_insn& insn, const cs_x86_op& mem) {
    const int disp_offset = rip_disp_offset(insn, mem);
    if (disp_offset < 0) return refuse("an odd RIP-relative operand");
    const uint64_t effective = insn.address + insn.size + static_cast<uint64_t>(mem.mem.disp);
    rip_reads_.push_back(effective);
    auto disp = rel32(w_.here() + insn.size, effective);
    if (!disp) return refuse("a RIP-relative operand out of the trampoline's reach");
    std::vector<uint8_t> bytes(insn.bytes, insn.bytes + insn.size);
    std::memcpy(bytes.data() + disp_offset, &*disp, 4);
    w_.emit(bytes.data(), bytes.size());
    return {};
  }

  csh handle_;
  TrampolineWriter& w_;
  CountingPatch& out_;
  std::size_t slots_ = 0;
  std::vector<uint64_t> rip_reads_;
};
}  // namespace

btstub::Expected<CountingPatch> build_counting_patch(uint64_t target, const std::vector<uint8_t>& code,
                                                      uint64_t page_address, uint64_t hits) {
  if (hits == 0) return make_error(ErrorCode::InvalidArgument, "No visit to count to");
  if (page_address % kCountingPageSize != 0) return make_error(ErrorCode::InvalidArgument, "Unaligned page");
  CapstoneDetail cs;
  if (auto opened = CapstoneDetail::open(cs); !opened) return opened.error();

  CountingPatch out;
  out.target = target;
  out.page_address = page_address;
  out.counter_address = page_address + kCounterOffset;
  out.page.assign(kCountingPageSize, 0xcc);
  std::memset(out.page.data(), 0, kCodeOffset);
  std::memcpy(out.page.data() + kCounterOffset, &hits, 8);

  TrampolineWriter w(page_address, out.page);
  // Count down; on zero, rcx back and stop; else rcx back and run on.
  static constexpr uint8_t kDecrement[] = {0x48, 0x8d, 0x49, 0xff};  // lea rcx, [rcx-1]
  static constexpr uint8_t kSkipToHit[] = {0xe3, 0x02};              // jrcxz hit
  static constexpr uint8_t kSkipHit[] = {0xeb, 0x08};                // jmp continue
  static constexpr uint8_t kInt3[] = {0xcc};
  if (!w.swap_counter()) return refuse("the trampoline page is out of reach");
  w.emit(kDecrement, sizeof kDecrement);
  w.emit(kSkipToHit, sizeof kSkipToHit);
  w.emit(kSkipHit, sizeof kSkipHit);
  (void)w.swap_counter();  // hit:
  w.emit(kInt3, 1);
  out.stop_pc = w.here();
  (void)w.swap_counter();  // continue:

  // The instructions the jmp overwrites, moved into the trampoline.
  std::size_t covered = 0;
  InstructionMover mover(cs.handle, w, out);
  while (covered < kJmpRel32Size) {
    const uint8_t* cursor = code.data() + covered;
    std::size_t remaining = code.size() - covered;
    uint64_t address = target + covered;
    if (remaining == 0 || !cs_disasm_iter(cs.handle, &cursor, &remaining, &address, cs.insn)) {
      return refuse("undecodable code at the breakpoint");
    }
    if (auto moved = mover.move(*cs.insn); !moved) return moved.error();
    covered += cs.insn->size;
  }
  for (uint64_t effective : mover.rip_reads()) {
    if (effective >= target && effective < target + covered) return refuse("code that reads its own bytes");
  }
  if (!w.emit_with_rel32({0xe9}, target + covered)) return refuse("the trampoline page is out of reach");
  if (kCodeOffset + w.size() > kCountingPageSize) return refuse("the trampoline does not fit its page");
  w.finish();

  out.original.assign(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(covered));
  out.patch.assign(covered, 0xcc);
  auto into = rel32(target + kJmpRel32Size, page_address + kCodeOffset);
  if (!into) return refuse("the trampoline page is out of reach");
  out.patch[0] = 0xe9;
  std::memcpy(out.patch.data() + 1, &*into, 4);
  return out;
}

}  // namespace decoder
