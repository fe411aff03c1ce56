#pragma once
// Internal to decoder/ (block_translator.cc): the few x86-64 encodings the
// code cache's translations are made of, written into a buffer meant to run
// at `base`. Every one of them leaves EFLAGS as it was (mov, lea, movabs,
// push, jmp, jrcxz, int3) and none but push touches the stack. The per-thread
// slots they use are addressed through the gs segment base
// (decoder/block_translator.h describes the area).
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace decoder {

// The two registers the instrumentation borrows (saved in gs slots first).
enum class Scratch : uint8_t { Rax = 0, Rcx = 1 };

class CacheCodeWriter {
 public:
  explicit CacheCodeWriter(uint64_t base) : base_(base) {}

  uint64_t base() const { return base_; }
  std::size_t offset() const { return code_.size(); }
  uint64_t here() const { return base_ + code_.size(); }
  std::vector<uint8_t>& code() { return code_; }

  void bytes(std::initializer_list<uint8_t> b) { code_.insert(code_.end(), b); }
  void raw(const uint8_t* b, std::size_t n) { code_.insert(code_.end(), b, b + n); }
  void u32(uint32_t v);
  void u64(uint64_t v);

  // mov %reg, %gs:slot / mov %gs:slot, %reg (absolute disp32, no base).
  void store_slot(Scratch reg, int32_t slot);
  void load_slot(Scratch reg, int32_t slot);
  // movabs $value, %reg for any general register (0 = rax ... 15 = r15).
  void movabs(unsigned reg, uint64_t value);
  void movabs(Scratch reg, uint64_t value) { movabs(static_cast<unsigned>(reg), value); }
  // A field of the record the cursor points at (reg: 0 = rax ... 7 =
  // rdi): movnti %reg, %gs:disp(%rcx) when `non_temporal`, else
  // mov %reg, %gs:disp(%rcx) (block_translator.h "Log stores").
  void store_at_rcx(unsigned reg, int8_t disp, bool non_temporal);
  // prefetchw %gs:disp(%rcx): the line there asked for, to be written.
  void prefetchw_at_rcx(int32_t disp);
  // lea disp(%rsp), %rax: rsp as it was before the branch moved it.
  void rsp_into_rax(int32_t disp);
  // lea disp(%rcx), %rcx
  void add_to_rcx(int8_t disp);
  // mov (%rsp), %rax ; lea disp(%rsp), %rsp (the pop of a ret imm16)
  void pop_into_rax(int32_t disp);
  void push_rax() { bytes({0x50}); }
  // The indirect-target table lookup's parts (block_translator.h):
  // Twice the indirect-table index (decoder::indirect_entry_offset) of the
  // target in gs:`slot` into rcx, eax clobbered, no flag changed:
  //   movzwl %gs:slot, %ecx ; movzwl %gs:slot+2, %eax ; lea (%rcx,%rax), %ecx
  //   movzwl %cx, %ecx ; lea (%rcx,%rcx), %rcx
  void table_index_into_rcx(int32_t slot);
  // mov %gs:disp(,%rcx,8), %rcx
  void load_rcx_at_gs_rcx8(int32_t disp);
  // lea (%rcx,%rax), %rcx
  void add_rax_to_rcx() { bytes({0x48, 0x8d, 0x0c, 0x01}); }
  // jmp *%gs:slot
  void jmp_slot(int32_t slot);
  void int3() { bytes({0xcc}); }
  void nop() { bytes({0x90}); }

  // Branches whose target is a label in this buffer, filled in later with
  // patch_*: each returns the offset of its displacement field.
  std::size_t jmp_rel32();
  std::size_t jrcxz_rel8();
  std::size_t jmp_rel8();
  // The displacement at `field` (an instruction ending right after it) made
  // to reach `to` (an offset in this buffer, or an absolute address).
  bool patch_rel8(std::size_t field, std::size_t to_offset);
  bool patch_rel32_to(std::size_t field, uint64_t to_address);

 private:
  void slot_move(uint8_t opcode, Scratch reg, int32_t slot);

  uint64_t base_;
  std::vector<uint8_t> code_;
};

}  // namespace decoder
