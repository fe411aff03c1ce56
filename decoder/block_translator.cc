#include "decoder/block_translator.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "decoder/cache_code_writer.h"
#include "decoder/capstone_detail.h"
#include "decoder/instruction_history.h"
#include "protocol/hex_text.h"

namespace decoder {
namespace {

using btstub::ErrorCode;
using btstub::make_error;

using protocol::hex;

btstub::Error refuse(uint64_t address, const std::string& why) {
  return make_error(ErrorCode::NotSupported, "cannot translate the instruction at " + hex(address) + ": " + why);
}

// The encoding number (0 = rax ... 15 = r15) of a 64-bit general register.
std::optional<unsigned> gpr64_number(x86_reg reg) {
  static constexpr x86_reg kRegs[] = {X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP,
                                      X86_REG_RSI, X86_REG_RDI, X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
                                      X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15};
  for (unsigned i = 0; i < 16; ++i) {
    if (kRegs[i] == reg) return i;
  }
  return std::nullopt;
}

bool uses_gs(const cs_x86& x86) {
  if (x86.prefix[1] == X86_PREFIX_GS) return true;
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type == X86_OP_REG && op.reg == X86_REG_GS) return true;
    if (op.type == X86_OP_MEM && op.mem.segment == X86_REG_GS) return true;
  }
  return false;
}

// Why the block must end before `insn`; empty when the cache can run it.
std::string barrier(csh handle, const cs_insn& insn, const TranslateOptions& options) {
  if (options.stop_before && options.stop_before(insn.address)) return "an address the tracer must stop at";
  switch (insn.id) {
    case X86_INS_SYSCALL:
      // Else it runs in place: the kernel returns to the next one.
      return options.syscalls_exit ? "a system call the tracer stops at" : "";
    case X86_INS_HLT: case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
    case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO: case X86_INS_SYSENTER:
      return std::string("a trapping instruction (") + insn.mnemonic + ")";
    case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_RETF: case X86_INS_RETFQ:
      return "a far transfer";
    case X86_INS_XBEGIN: case X86_INS_XABORT:
      return "a transaction";
    case X86_INS_RDTSC: case X86_INS_RDTSCP: case X86_INS_RDRAND: case X86_INS_RDSEED:
      return std::string("a nondeterministic instruction (") + insn.mnemonic + ")";
    case X86_INS_SWAPGS: case X86_INS_RDGSBASE: case X86_INS_WRGSBASE:
      return "an instruction using gs, which holds the translator's per-thread area";
    default:
      break;
  }
  if (in_group(handle, insn, CS_GRP_INT) || in_group(handle, insn, CS_GRP_IRET)) {
    return std::string("a trapping instruction (") + insn.mnemonic + ")";
  }
  if (uses_gs(insn.detail->x86)) return "an instruction using gs, which holds the translator's per-thread area";
  return "";
}

// barrier() for an instruction only vex_form() knows.
std::string unknown_barrier(uint64_t address, const uint8_t* bytes, const VexForm& form,
                            const TranslateOptions& options) {
  if (options.stop_before && options.stop_before(address)) return "an address the tracer must stop at";
  for (std::size_t i = 0; i < form.prefixes; ++i) {
    if (bytes[i] == 0x65) return "an instruction using gs, which holds the translator's per-thread area";
  }
  return "";
}

enum class Transfer { None, Jump, Conditional, Call, Return, IndirectJump, IndirectCall };

Transfer transfer_of(csh handle, const cs_insn& insn) {
  const cs_x86& x86 = insn.detail->x86;
  const bool immediate = x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM;
  if (insn.id == X86_INS_RET) return Transfer::Return;
  if (insn.id == X86_INS_CALL) return immediate ? Transfer::Call : Transfer::IndirectCall;
  if (insn.id == X86_INS_JMP) return immediate ? Transfer::Jump : Transfer::IndirectJump;
  switch (insn.id) {
    case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
    case X86_INS_JRCXZ: case X86_INS_JECXZ: case X86_INS_JCXZ:
      return Transfer::Conditional;  // not in CS_GRP_JUMP in Capstone 4
    default:
      break;
  }
  if (in_group(handle, insn, CS_GRP_JUMP) && immediate) return Transfer::Conditional;
  return Transfer::None;
}

const cs_x86_op* rip_operand(const cs_x86& x86) {
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    if (x86.operands[i].type == X86_OP_MEM && x86.operands[i].mem.base == X86_REG_RIP) return &x86.operands[i];
  }
  return nullptr;
}

// The conditional branch's own condition as a 2-byte (3 with an
// address-size prefix) rel8 jump over the 5-byte jmp that follows it:
// jcc, jrcxz/jecxz, loop/loope/loopne all have that form.
std::optional<std::vector<uint8_t>> skip_if_taken(const cs_insn& insn) {
  std::vector<uint8_t> out;
  std::size_t i = 0;
  for (; i < insn.size; ++i) {
    const uint8_t b = insn.bytes[i];
    if (b == 0x67) {
      out.push_back(b);  // jecxz, loop on ecx
    } else if (b != 0x2e && b != 0x3e && b != 0xf2) {
      break;  // past branch hints and bnd
    }
  }
  if (i >= insn.size) return std::nullopt;
  const uint8_t op = insn.bytes[i];
  if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
    out.push_back(op);
  } else if (op == 0x0f && i + 1 < insn.size && insn.bytes[i + 1] >= 0x80 && insn.bytes[i + 1] <= 0x8f) {
    out.push_back(static_cast<uint8_t>(0x70 | (insn.bytes[i + 1] & 0x0f)));
  } else {
    return std::nullopt;
  }
  out.push_back(5);
  return out;
}

struct PendingStub {
  std::size_t field = 0;  // the rel32 of the jmp into the stub
  uint64_t from = 0;
  uint64_t target = 0;
  bool logged = false;
  int32_t rsp_adjust = 0;
};

// The record's rbp field: rbp is register 5.
constexpr unsigned kRbp = 5;

// Writes one block: copied instructions, then the instrumented transfer,
// then the stubs of its direct exits.
class BlockWriter {
 public:
  BlockWriter(csh handle, Translation& out, LogStores stores)
      : handle_(handle), out_(out), w_(out.cache_address), non_temporal_(stores == LogStores::NonTemporal) {}

  // The code written from here on stands for `original`.
  void at(uint64_t original) {
    if (!out_.pc_map.empty() && out_.pc_map.back().original == original) return;
    if (!out_.pc_map.empty() && out_.pc_map.back().offset == w_.offset()) {
      out_.pc_map.back().original = original;
      return;
    }
    out_.pc_map.push_back({static_cast<uint32_t>(w_.offset()), original});
  }

  btstub::Expected<void> copy(const cs_insn& insn);
  // An instruction Capstone does not know but vex_form does: VEX and EVEX
  // never transfer control, so it is copied like any other.
  btstub::Expected<void> copy_unknown(uint64_t address, const uint8_t* bytes, const VexForm& form);
  void direct_jump(uint64_t from, uint64_t to) {
    w_.store_slot(Scratch::Rcx, kSlotSavedRcx);
    log_direct(from, to, 0);
  }
  btstub::Expected<void> conditional(const cs_insn& insn, uint64_t to);
  void direct_call(uint64_t from, uint64_t to, uint64_t return_address) {
    w_.store_slot(Scratch::Rcx, kSlotSavedRcx);
    log_direct(from, to, 8, return_address);
  }
  btstub::Expected<void> indirect(const cs_insn& insn, Transfer kind);
  // An unlogged exit to `address` (the block stops before it).
  void stop_at(uint64_t address) { stubs_.push_back({w_.jmp_rel32(), 0, address, false, 0}); }
  btstub::Expected<void> finish();

 private:
  // Copies `bytes` with the disp32 at `disp_offset` made to reach
  // `effective` from the cache.
  btstub::Expected<void> copy_retargeted(uint64_t address, const uint8_t* bytes, std::size_t size,
                                         std::size_t disp_offset, uint64_t effective);
  // `rsp_adjust`: rsp before the branch minus rsp after it. A call's
  // `return_address` is pushed once the log has room (BlockExit::retry).
  void log_direct(uint64_t from, uint64_t to, int32_t rsp_adjust, uint64_t return_address = 0);
  void log_indirect(uint64_t from, int32_t rsp_adjust, uint64_t return_address = 0);
  // push `return_address` (rax and rcx borrowed): it may fault.
  void push_return(uint64_t return_address) {
    w_.movabs(Scratch::Rax, return_address);
    fault_point(true, true);
    w_.push_rax();
  }
  // With rcx at the free record and the record's from/to written:
  // rsp and rbp as before the branch (rax borrowed).
  void log_stack(int32_t rsp_adjust) {
    w_.rsp_into_rax(rsp_adjust);
    store_field(0, 16);
    store_field(kRbp, 24);
  }
  btstub::Expected<void> load_target(const cs_insn& insn);
  // A field of the record at rcx from register `reg`.
  void store_field(unsigned reg, int8_t disp) { w_.store_at_rcx(reg, disp, non_temporal_); }
  // The first thing a record's writing does, with rcx at the free record.
  void prepare_record() {
    if (!non_temporal_) w_.prefetchw_at_rcx(kLogPrefetchAhead);
  }
  void fault_point(bool rax_saved, bool rcx_saved) {
    out_.fault_points.push_back({static_cast<uint32_t>(w_.offset()), rax_saved, rcx_saved});
  }
  // A call's log-full exit comes before its push, nothing done yet but
  // the registers borrowed and put back: the thread runs the call again
  // from its start (BlockExit::retry).
  void log_full(uint64_t from, uint64_t target, int32_t rsp_adjust, uint64_t return_address) {
    const bool call = return_address != 0;
    trap(ExitKind::LogFull, from, target, call ? 0 : rsp_adjust);
    if (call) {
      BlockExit& exit = out_.exits.back();
      exit.retry = true;
      exit.retry_offset = out_.pc_map.back().offset;  // the call's own entry: nothing after it yet
    }
  }
  void trap(ExitKind kind, uint64_t from, uint64_t target, int32_t rsp_adjust) {
    w_.int3();
    out_.exits.push_back({kind, static_cast<uint32_t>(w_.offset()), from, target, kind != ExitKind::LogFull, 0, 0,
                          rsp_adjust, kind == ExitKind::LogFull ? rcx_adjust_ : 0});
    w_.nop();  // never run: keeps the trap pc off the next instruction's start
  }
  void restore_scratch() {
    w_.load_slot(Scratch::Rax, kSlotSavedRax);
    w_.load_slot(Scratch::Rcx, kSlotSavedRcx);
  }

  csh handle_;
  Translation& out_;
  CacheCodeWriter w_;
  std::vector<PendingStub> stubs_;
  bool reached_ = true;  // every rel8 reached its label
  int32_t rcx_adjust_ = 0;  // while a loop's taken branch is logged
  bool non_temporal_;       // how records are written (LogStores)
};

btstub::Expected<void> BlockWriter::copy(const cs_insn& insn) {
  const cs_x86& x86 = insn.detail->x86;
  if (cs_insn_group(handle_, &insn, CS_GRP_BRANCH_RELATIVE)) {
    // Copied, it would branch relative to the cache, unlogged.
    return refuse(insn.address, std::string("a relative branch the translator does not know (") + insn.mnemonic + ")");
  }
  const cs_x86_op* mem = rip_operand(x86);
  if (mem == nullptr) {
    w_.raw(insn.bytes, insn.size);
    return {};
  }
  if (x86.prefix[3] == X86_PREFIX_ADDRSIZE) return refuse(insn.address, "an EIP-relative operand");
  const uint64_t effective = insn.address + insn.size + static_cast<uint64_t>(mem->mem.disp);
  if (insn.id == X86_INS_LEA && x86.operands[0].type == X86_OP_REG) {
    if (auto reg = gpr64_number(x86.operands[0].reg)) {
      w_.movabs(*reg, effective);  // the address itself: reaches from anywhere
      return {};
    }
  }
  const int disp_offset = rip_disp_offset(insn, *mem);
  if (disp_offset < 0) return refuse(insn.address, "a RIP-relative operand of an unexpected form");
  return copy_retargeted(insn.address, insn.bytes, insn.size, static_cast<std::size_t>(disp_offset), effective);
}

btstub::Expected<void> BlockWriter::copy_unknown(uint64_t address, const uint8_t* bytes, const VexForm& form) {
  const uint8_t modrm = bytes[form.modrm_at];
  if ((modrm >> 6) != 0 || (modrm & 7) != 5) {
    w_.raw(bytes, form.size);
    return {};
  }
  for (std::size_t i = 0; i < form.prefixes; ++i) {
    if (bytes[i] == 0x67) return refuse(address, "an EIP-relative operand");
  }
  int32_t disp = 0;
  std::memcpy(&disp, bytes + form.modrm_at + 1, 4);
  const uint64_t effective = address + form.size + static_cast<uint64_t>(static_cast<int64_t>(disp));
  return copy_retargeted(address, bytes, form.size, form.modrm_at + 1, effective);
}

btstub::Expected<void> BlockWriter::copy_retargeted(uint64_t address, const uint8_t* bytes, std::size_t size,
                                                    std::size_t disp_offset, uint64_t effective) {
  auto disp = rel32(w_.here() + size, effective);
  if (!disp) {
    return refuse(address, "its RIP-relative operand (" + hex(effective) + ") is out of 32-bit reach of the cache at " +
                               hex(w_.here()));
  }
  std::vector<uint8_t> copied(bytes, bytes + size);
  std::memcpy(copied.data() + disp_offset, &*disp, 4);
  w_.raw(copied.data(), copied.size());
  return {};
}

btstub::Expected<void> BlockWriter::conditional(const cs_insn& insn, uint64_t to) {
  auto skip = skip_if_taken(insn);
  if (!skip) return refuse(insn.address, std::string("an unexpected conditional branch (") + insn.mnemonic + ")");
  const bool counts = insn.id == X86_INS_LOOP || insn.id == X86_INS_LOOPE || insn.id == X86_INS_LOOPNE;
  // On ecx the count zero-extends into rcx: its value before is lost.
  if (counts && (*skip)[0] == 0x67) return refuse(insn.address, "a loop on ecx (its count cannot be put back)");
  w_.raw(skip->data(), skip->size());
  stop_at(insn.address + insn.size);  // not taken: nothing logged
  rcx_adjust_ = counts ? 1 : 0;
  direct_jump(insn.address, to);
  rcx_adjust_ = 0;
  return {};
}

// With rcx saved: appends {from, to, rsp, rbp} and jumps to the exit for `to`.
void BlockWriter::log_direct(uint64_t from, uint64_t to, int32_t rsp_adjust, uint64_t return_address) {
  w_.load_slot(Scratch::Rcx, kSlotLogCursor);
  const std::size_t full = w_.jrcxz_rel8();
  prepare_record();
  w_.store_slot(Scratch::Rax, kSlotSavedRax);
  if (return_address != 0) push_return(return_address);
  w_.movabs(Scratch::Rax, from);
  store_field(0, 0);
  w_.movabs(Scratch::Rax, to);
  store_field(0, 8);
  log_stack(rsp_adjust);
  w_.add_to_rcx(static_cast<int8_t>(kLogRecordSize));
  w_.store_slot(Scratch::Rcx, kSlotLogCursor);
  restore_scratch();
  stubs_.push_back({w_.jmp_rel32(), from, to, true, rsp_adjust});
  reached_ = w_.patch_rel8(full, w_.offset()) && reached_;
  w_.store_slot(Scratch::Rax, kSlotSavedRax);
  w_.movabs(Scratch::Rax, to);
  w_.store_slot(Scratch::Rax, kSlotExitTarget);
  restore_scratch();
  log_full(from, to, rsp_adjust, return_address);
}

// With rax and rcx saved and the target in rax and in the exit slot:
// appends {from, target, rsp, rbp}, then goes to the target's translation
// if the indirect-target table holds it, else exits.
void BlockWriter::log_indirect(uint64_t from, int32_t rsp_adjust, uint64_t return_address) {
  w_.load_slot(Scratch::Rcx, kSlotLogCursor);
  const std::size_t full = w_.jrcxz_rel8();
  prepare_record();
  store_field(0, 8);
  if (return_address != 0) push_return(return_address);
  w_.movabs(Scratch::Rax, from);
  store_field(0, 0);
  log_stack(rsp_adjust);
  w_.add_to_rcx(static_cast<int8_t>(kLogRecordSize));
  w_.store_slot(Scratch::Rcx, kSlotLogCursor);
  const std::size_t logged = w_.jmp_rel8();
  // The log-full exit here, within a rel8 of the check.
  reached_ = w_.patch_rel8(full, w_.offset()) && reached_;
  restore_scratch();
  log_full(from, 0, rsp_adjust, return_address);
  reached_ = w_.patch_rel8(logged, w_.offset()) && reached_;
  // The target in the table: -original + target == 0 (no flags change).
  w_.table_index_into_rcx(kSlotExitTarget);
  w_.load_rcx_at_gs_rcx8(kIndirectTable);
  w_.load_slot(Scratch::Rax, kSlotExitTarget);
  w_.add_rax_to_rcx();
  const std::size_t hit = w_.jrcxz_rel8();
  restore_scratch();
  trap(ExitKind::Indirect, from, 0, rsp_adjust);
  reached_ = w_.patch_rel8(hit, w_.offset()) && reached_;
  w_.table_index_into_rcx(kSlotExitTarget);
  w_.load_rcx_at_gs_rcx8(kIndirectTable + 8);
  w_.store_slot(Scratch::Rcx, kSlotJumpTarget);
  restore_scratch();
  w_.jmp_slot(kSlotJumpTarget);
}

// mov <the jmp/call's r/m64 operand>, %rax: the same ModRM, SIB and
// displacement under opcode 8b, so registers and memory are read as the
// original would read them.
btstub::Expected<void> BlockWriter::load_target(const cs_insn& insn) {
  std::vector<uint8_t> out;
  std::size_t i = 0;
  for (; i < insn.size; ++i) {
    const uint8_t b = insn.bytes[i];
    if (b == 0x2e || b == 0x3e || b == 0xf2) continue;  // hints, notrack, bnd: nothing to a mov
    if (b == 0x26 || b == 0x36 || b == 0x64) {
      out.push_back(b);  // segment overrides (fs matters)
      continue;
    }
    if (b == 0x66 || b == 0x67 || b == 0x65 || b == 0xf0 || b == 0xf3) {
      return refuse(insn.address, "an indirect transfer with an unexpected prefix");
    }
    break;
  }
  uint8_t rex = 0;
  if (i < insn.size && (insn.bytes[i] & 0xf0) == 0x40) rex = insn.bytes[i++];
  if (i + 1 >= insn.size || insn.bytes[i] != 0xff) return refuse(insn.address, "an indirect transfer of an unexpected form");
  const uint8_t modrm = insn.bytes[i + 1] & 0xc7;  // reg field 0: rax
  out.push_back(static_cast<uint8_t>(0x48 | (rex & 0x03)));
  out.push_back(0x8b);
  const std::size_t modrm_at = out.size();
  out.push_back(modrm);
  out.insert(out.end(), insn.bytes + i + 2, insn.bytes + insn.size);
  if (modrm == 0x05) {  // RIP-relative: the displacement follows the ModRM
    int32_t disp = 0;
    std::memcpy(&disp, out.data() + modrm_at + 1, 4);
    const uint64_t effective = insn.address + insn.size + static_cast<uint64_t>(static_cast<int64_t>(disp));
    auto moved = rel32(w_.here() + out.size(), effective);
    if (!moved) return refuse(insn.address, "its RIP-relative operand is out of 32-bit reach of the cache");
    std::memcpy(out.data() + modrm_at + 1, &*moved, 4);
  }
  w_.raw(out.data(), out.size());
  return {};
}

btstub::Expected<void> BlockWriter::indirect(const cs_insn& insn, Transfer kind) {
  w_.store_slot(Scratch::Rcx, kSlotSavedRcx);
  w_.store_slot(Scratch::Rax, kSlotSavedRax);
  int32_t rsp_adjust = 0;
  fault_point(true, true);  // reading the return slot or the target
  if (kind == Transfer::Return) {
    const cs_x86& x86 = insn.detail->x86;
    const int64_t extra = x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM ? x86.operands[0].imm : 0;
    w_.pop_into_rax(static_cast<int32_t>(8 + extra));
    rsp_adjust = -static_cast<int32_t>(8 + extra);
  } else if (auto loaded = load_target(insn); !loaded) {
    return loaded;
  }
  w_.store_slot(Scratch::Rax, kSlotExitTarget);
  if (kind == Transfer::IndirectCall) {
    log_indirect(insn.address, 8, insn.address + insn.size);
  } else {
    log_indirect(insn.address, rsp_adjust);
  }
  return {};
}

btstub::Expected<void> BlockWriter::finish() {
  for (const PendingStub& stub : stubs_) {
    const std::size_t stub_offset = w_.offset();
    at(stub.target);
    w_.store_slot(Scratch::Rax, kSlotSavedRax);
    w_.movabs(Scratch::Rax, stub.target);
    w_.store_slot(Scratch::Rax, kSlotExitTarget);
    w_.load_slot(Scratch::Rax, kSlotSavedRax);
    trap(ExitKind::Direct, stub.from, stub.target, stub.rsp_adjust);
    BlockExit& exit = out_.exits.back();
    exit.logged = stub.logged;
    exit.link_field = static_cast<uint32_t>(stub.field);
    exit.stub_offset = static_cast<uint32_t>(stub_offset);
    reached_ = w_.patch_rel32_to(stub.field, out_.cache_address + stub_offset) && reached_;
  }
  if (!reached_) return make_error(ErrorCode::Internal, "block translator: a branch within the translation does not reach");
  out_.code = std::move(w_.code());
  return {};
}

// Translates instructions into `b` until a transfer ends the block or an
// instruction it must stop before.
btstub::Expected<void> translate_into(BlockWriter& b, CapstoneDetail& cs, std::span<const uint8_t> code,
                                      const TranslateOptions& options, Translation& out) {
  const uint8_t* cursor = code.data();
  std::size_t remaining = code.size();
  uint64_t pc = out.address;
  for (;;) {
    const uint64_t at = pc;
    std::string why;
    std::optional<VexForm> unknown;  // set: Capstone does not know it, vex_form does
    if (out.instructions == kMaxBlockInstructions) {
      why = "the block's instruction limit";
    } else if (remaining == 0) {
      why = "undecodable or truncated code";
    } else if (cs_disasm_iter(cs.handle, &cursor, &remaining, &pc, cs.insn)) {
      why = barrier(cs.handle, *cs.insn, options);
    } else if ((unknown = vex_form(cursor, std::min(remaining, kMaxInstructionSize)))) {
      why = unknown_barrier(at, cursor, *unknown, options);
    } else {
      why = "undecodable or truncated code";
    }
    if (!why.empty()) {
      if (out.instructions == 0) return refuse(at, why);
      b.at(at);  // the block's instructions are done: the pc is at the next
      b.stop_at(at);
      out.stopped_before = why + " at " + hex(at);
      return {};
    }
    b.at(at);
    if (unknown) {
      // Capstone 4 gives up on many AVX-512 forms glibc's string functions
      // use on CPUs that have them (kmovd, vpcmpeqb into a mask, ...).
      if (auto done = b.copy_unknown(at, cursor, *unknown); !done) return done;
      cursor += unknown->size;
      remaining -= unknown->size;
      pc += unknown->size;
      ++out.instructions;
      out.end = pc;
      continue;
    }
    const cs_insn& insn = *cs.insn;
    const Transfer kind = transfer_of(cs.handle, insn);
    const bool direct = kind == Transfer::Jump || kind == Transfer::Conditional || kind == Transfer::Call;
    const uint64_t to = direct ? static_cast<uint64_t>(insn.detail->x86.operands[0].imm) : 0;
    btstub::Expected<void> done;
    switch (kind) {
      case Transfer::None: done = b.copy(insn); break;
      case Transfer::Jump: b.direct_jump(at, to); break;
      case Transfer::Conditional: done = b.conditional(insn, to); break;
      case Transfer::Call: b.direct_call(at, to, at + insn.size); break;
      case Transfer::Return: case Transfer::IndirectJump: case Transfer::IndirectCall:
        done = b.indirect(insn, kind);
        break;
    }
    if (!done) return done;
    ++out.instructions;
    out.end = at + insn.size;
    if (kind == Transfer::Call || kind == Transfer::IndirectCall) out.return_site = out.end;
    if (kind == Transfer::IndirectJump || kind == Transfer::IndirectCall) {
      const cs_x86_op* slot = rip_operand(insn.detail->x86);
      if (slot != nullptr && slot->mem.index == X86_REG_INVALID && slot->mem.segment == X86_REG_INVALID) {
        out.target_slot = at + insn.size + static_cast<uint64_t>(slot->mem.disp);
      }
    }
    if (kind != Transfer::None) return {};
  }
}

}  // namespace

uint64_t Translation::original_pc(uint64_t cache_pc) const {
  if (cache_pc < cache_address || cache_pc >= cache_address + code.size() || pc_map.empty()) return 0;
  const uint64_t offset = cache_pc - cache_address;
  auto next = std::upper_bound(pc_map.begin(), pc_map.end(), offset,
                               [](uint64_t o, const PcMapEntry& e) { return o < e.offset; });
  if (next == pc_map.begin()) return 0;
  return std::prev(next)->original;
}

const BlockExit* Translation::exit_at(uint64_t cache_pc) const {
  for (const BlockExit& exit : exits) {
    if (cache_address + exit.trap_offset == cache_pc) return &exit;
  }
  return nullptr;
}

bool Translation::at_entry(uint64_t cache_pc) const {
  if (cache_pc < cache_address || cache_pc >= cache_address + code.size()) return false;
  const uint64_t offset = cache_pc - cache_address;
  auto it = std::lower_bound(pc_map.begin(), pc_map.end(), offset,
                             [](const PcMapEntry& e, uint64_t o) { return e.offset < o; });
  return it != pc_map.end() && it->offset == offset;
}

const FaultPoint* Translation::fault_point_at(uint64_t cache_pc) const {
  for (const FaultPoint& point : fault_points) {
    if (cache_address + point.offset == cache_pc) return &point;
  }
  return nullptr;
}

btstub::Expected<Translation> translate_block(uint64_t address, std::span<const uint8_t> code,
                                              uint64_t cache_address, const TranslateOptions& options) {
  // One decoder per thread, opened once: cs_open per block was about a tenth
  // of btstub's time while a program's code was being translated.
  thread_local CapstoneDetail cs;
  if (cs.insn == nullptr) {
    if (auto opened = CapstoneDetail::open(cs); !opened) return opened.error();
  }
  Translation out;
  out.address = address;
  out.end = address;
  out.cache_address = cache_address;
  BlockWriter writer(cs.handle, out, options.log_stores);
  if (auto done = translate_into(writer, cs, code, options, out); !done) return done.error();
  if (auto done = writer.finish(); !done) return done.error();
  return out;
}

btstub::Expected<CodePatch> link_exit(const Translation& t, std::size_t exit_index, uint64_t destination) {
  if (exit_index >= t.exits.size() || t.exits[exit_index].kind != ExitKind::Direct) {
    return make_error(ErrorCode::InvalidArgument, "link_exit: exit " + std::to_string(exit_index) + " is not a direct exit");
  }
  const uint64_t field = t.cache_address + t.exits[exit_index].link_field;
  auto rel = rel32(field + 4, destination);
  if (!rel) return make_error(ErrorCode::NotSupported, "link_exit: " + hex(destination) + " is out of 32-bit reach");
  CodePatch patch;
  patch.address = field;
  patch.bytes.resize(4);
  std::memcpy(patch.bytes.data(), &*rel, 4);
  return patch;
}

}  // namespace decoder
