#pragma once
// The code-generating layer of the translating tracer (issue 28): one basic
// block of the program, copied into a code cache in the program's own
// memory, with its branch replaced by code that logs the taken branch and
// goes on. No OS calls: what it emits is run in the test process
// (tests/unit/decoder/test_block_translator.cc).
//
// A block is the run of instructions from `address` up to and including the
// first control transfer (jmp, jcc, jrcxz, loop*, call, ret, jmp/call
// through a register or memory). System calls stay inside unless
// TranslateOptions say otherwise, as do addresses it names. The block ends
// *before* an instruction the cache cannot run in place (int*, hlt, ud2,
// far transfers, xbegin, rdtsc/rdtscp/rdrand/rdseed, anything using gs,
// bytes Capstone cannot decode): a direct exit to that address hands it to
// the tracer. Copied instructions keep their bytes, except RIP-relative
// operands: `lea X(%rip), %r64` becomes `movabs $X, %r64`; every other
// RIP-relative operand gets a displacement for the cache address (an error
// when the cache is more than 2 GiB away from what it reads).
//
// Per-thread area. The translations address it through the gs segment base
// (arch_prctl(ARCH_SET_GS) per thread; x86-64 Linux programs leave gs
// unused, and a block that uses gs is not translated). Slots at the base:
//   gs:0   saved rax        gs:8   saved rcx
//   gs:16  log cursor       gs:24  exit target (original address)
//   gs:32  jump target (scratch of the indirect lookup)
// Above the slots, from gs:kIndirectTable, the indirect-target table:
// kIndirectTableEntries entries of 16 bytes, indexed by the target's bits
// 0-15 plus its bits 16-31 (indirect_entry_offset): {-original, cache
// address of its translation}; an empty entry is
// all zero except entry 0 (empty_indirect_entry). The tracer fills it; the
// translations only read it.
// The log lies just below the base: [base - 32 * capacity, base). The
// cursor is the (negative) offset from the base of the next free record,
// -32 * capacity when the log is empty, 0 when it is full, so the check
// is a jrcxz and no instruction that changes EFLAGS is needed.
// A record (LogRecord) is 32 bytes: the original address of the taken
// branch, the original address it went to, and rsp and rbp as they were
// before the branch ran (what the ptrace tracer stores with each branch:
// decoder::StackSnapshot). A jcc that is not taken logs nothing; a call
// logs (call, callee) and pushes the ORIGINAL return address; a ret logs
// (ret, return address).
//
// Log stores (TranslateOptions::log_stores). The log is mostly read on
// another core (a lent log), and a plain store first fetches its line,
// from that core's caches or from memory, before writing it. Two ways
// around that:
//   NonTemporal       the fields are written with movnti, which writes
//                     whole lines to memory without reading them; the
//                     reader then reads them from memory. On an AMD EPYC
//                     VM, plain stores alone made recording Lua take
//                     1.27x as long.
//   CachedPrefetched  plain stores, and each record first asks for the
//                     line kLogPrefetchAhead bytes on for writing
//                     (prefetchw, which never faults, even past the log):
//                     the line is the writer's by the time it is written,
//                     and the reader finds the records in a cache, not in
//                     memory. On an Intel Xeon VM the program ran as fast
//                     as with movnti and btstub's encoding of its logs
//                     took a tenth less CPU; on an AMD EPYC VM under KVM
//                     recording Lua took 0.92x movnti's time, under PVM
//                     1.01x (docs/performance.md). btstub uses it
//                     wherever the CPU has prefetchw.
// Non-temporal stores are weakly ordered, even against the cursor's plain
// store: the log is read only while the thread is stopped, and every way
// to a stop (a trap, a signal, preemption) enters the kernel, whose locked
// instructions drain them first. A thread reads its own non-temporal
// stores back as any other.
//
// Exits. Every way out of a translation is an int3, reached with every
// register and flag as the program had them, and with the original target
// in the exit-target slot. The trap pc (just past the int3) names the exit
// in Translation::exits:
//   Direct   a stub for a direct target (jmp, jcc either way, call, or the
//            instruction the block stopped before). The jump into the stub
//            can be patched to go straight to another translation
//            (link_exit); the stub stays for unlinking.
//   Indirect a ret or jmp/call through a register or memory, logged, whose
//            target the indirect-target table does not hold (where it
//            does, the translation jumps straight to it): the tracer
//            translates the target and may enter it in the table.
//   LogFull  the log had no room: the branch is taken but not logged. The
//            tracer drains the log, appends {exit.from, exit-target slot,
//            rsp + exit.rsp_adjust, rbp}, resets the cursor and goes on at
//            the target. A call's comes before it does anything
//            (BlockExit::retry): drained, the thread runs the call again.
// A byte after each int3 keeps every trap pc apart from every instruction
// start (a single step that lands on code after an int3 is no exit).
// Nothing below rsp is touched except by the pushes a call makes anyway.
//
// Stops inside the instrumentation. A thread stopped at a pc_map entry's
// offset stands exactly where the original would at that entry's address
// (every register, flag and stack slot the program's). Elsewhere in the
// instrumentation the scratch registers may be borrowed; the only
// instructions there that can fault (reading a ret's slot or an indirect
// target, pushing a return address) are listed as FaultPoints with what
// it takes to stand at the branch again.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "protocol/expected.h"

namespace decoder {

// Offsets from the gs base.
inline constexpr int32_t kSlotSavedRax = 0;
inline constexpr int32_t kSlotSavedRcx = 8;
inline constexpr int32_t kSlotLogCursor = 16;
inline constexpr int32_t kSlotExitTarget = 24;
inline constexpr int32_t kSlotJumpTarget = 32;
inline constexpr std::size_t kThreadSlotsSize = 64;  // the rest reserved
inline constexpr int32_t kIndirectTable = 64;
inline constexpr std::size_t kIndirectTableEntries = 1 << 16;
inline constexpr std::size_t kIndirectEntrySize = 16;
// Bytes of the area from the gs base up (slots and table).
inline constexpr std::size_t kThreadAreaAboveBase = kIndirectTable + kIndirectTableEntries * kIndirectEntrySize;

// The table entry (its offset from the gs base, and its bytes) that sends
// indirect transfers to `original` straight to `cache_address`.
// The index folds in bits 16-31: indexed by the low 16 bits alone, hot
// targets 64 KiB apart (the same offset in two parts of a large program)
// took each other's entry at every call, one exit each (SQLite: 14,000 of
// its 16,000 indirect exits).
inline uint64_t indirect_entry_offset(uint64_t original) {
  const uint64_t index = ((original & 0xffff) + ((original >> 16) & 0xffff)) & (kIndirectTableEntries - 1);
  return kIndirectTable + index * kIndirectEntrySize;
}
// The bytes of the empty entry at `offset`, which no target matches. A
// target t looks only at its own index's entry and matches key -t: {0, 0}
// is matched by no target but 0, whose index is 0, so entry 0 holds key 1
// (matched only by 0xffff...ffff, whose index is 0xfffe). All zero, a call
// through a null pointer "found" a translation at cache address 0.
inline std::vector<uint8_t> empty_indirect_entry(uint64_t offset) {
  std::vector<uint8_t> entry(kIndirectEntrySize, 0);
  if (offset == indirect_entry_offset(0)) entry[0] = 1;
  return entry;
}
// Most instructions one block holds; a longer run ends in a direct exit.
inline constexpr std::size_t kMaxBlockInstructions = 64;

struct LogRecord {
  uint64_t from = 0;  // original address of the branch
  uint64_t to = 0;    // original address it went to
  uint64_t rsp = 0;   // before the branch ran
  uint64_t rbp = 0;
  bool operator==(const LogRecord&) const = default;
};
static_assert(sizeof(LogRecord) == 32);
inline constexpr std::size_t kLogRecordSize = sizeof(LogRecord);

enum class ExitKind { Direct, Indirect, LogFull };

struct BlockExit {
  ExitKind kind = ExitKind::Direct;
  uint32_t trap_offset = 0;  // the trap's pc - cache_address (past the int3)
  uint64_t from = 0;         // the branch's original address (0: none, a stop)
  uint64_t target = 0;       // Direct, and LogFull of a direct branch; else 0
  bool logged = false;       // Direct: the branch into this stub was logged
  // Direct only: the jmp rel32 to patch (offset of its rel32) and the stub.
  uint32_t link_field = 0;
  uint32_t stub_offset = 0;
  // rsp before the branch ran minus rsp at the trap (a call pushed 8, a
  // ret popped 8 + its immediate), for the record a LogFull exit owes.
  int32_t rsp_adjust = 0;
  // rcx before the branch ran minus rcx at the trap: 1 after a loop,
  // loope or loopne (they count rcx down first). With these two a thread
  // at a LogFull exit can be put back before its branch. (A loop on ecx,
  // whose count zero-extends, is not translated.)
  int32_t rcx_adjust = 0;
  // LogFull of a call: the call has done nothing yet (the log is checked
  // before its push), and the thread runs it again from its start, at
  // `retry_offset` (its pc_map entry), once the log is drained; or, out of
  // the cache, from the call's address. A push made before the check left
  // the return address below rsp of a thread put back before the call
  // (--trace-full=stop), where the program had other bytes; one the
  // tracer made would be no write the client's watchpoints see, and would
  // succeed on a guard page where the CPU's faults.
  bool retry = false;
  uint32_t retry_offset = 0;
};

// An instruction of the instrumentation that can fault. A thread stopped
// by a fault there stands at the branch (original_pc of the offset) once
// the saved scratch registers are put back from their slots; nothing else
// has changed yet (the faulting instruction did not complete).
struct FaultPoint {
  uint32_t offset = 0;
  bool rax_saved = false;  // rax is in kSlotSavedRax (and borrowed)
  bool rcx_saved = false;  // rcx is in kSlotSavedRcx (and borrowed)
};

// How translations write their log records ("Log stores" above).
enum class LogStores { NonTemporal, CachedPrefetched };
// How far ahead of the record being written CachedPrefetched asks for a
// line: 128 records, far enough for the line to arrive from the other
// core or memory in time (1, 4, 8 and 16 KiB measured alike).
inline constexpr int32_t kLogPrefetchAhead = 4096;

// What else ends a block before an instruction.
struct TranslateOptions {
  // A `syscall` ends the block (a direct exit to it) instead of running
  // inside: for a tracer that checkpoints at system calls.
  bool syscalls_exit = false;
  // Addresses a block must end before (user breakpoints, which the cache
  // would otherwise run past): called for each instruction's address.
  std::function<bool(uint64_t)> stop_before;
  LogStores log_stores = LogStores::NonTemporal;
};

// From offset `offset` on (to the next entry's), the cache code stands for
// the instruction at `original`. The instrumentation of a branch stands
// for the branch; a stub for its target (the branch has been taken).
struct PcMapEntry {
  uint32_t offset = 0;
  uint64_t original = 0;
};

struct Translation {
  uint64_t address = 0;        // original address of the block
  uint64_t end = 0;            // past its last translated instruction
  std::size_t instructions = 0;
  uint64_t cache_address = 0;  // where `code` is meant to run
  std::vector<uint8_t> code;
  std::vector<BlockExit> exits;
  std::vector<PcMapEntry> pc_map;  // by offset, ascending
  std::vector<FaultPoint> fault_points;  // by offset, ascending
  std::string stopped_before;      // why the block ended before `end`, if so
  uint64_t return_site = 0;        // where the call ending the block returns to (0: none)
  // Where the jmp/call ending the block reads its target when that is a
  // RIP-relative operand (a GOT or PLT slot, a function pointer in the
  // program's data; 0: any other form). What it holds when translated is a
  // guess of the target, for translating ahead only.
  uint64_t target_slot = 0;

  // The original pc a cache pc stands for (0 when outside the code).
  uint64_t original_pc(uint64_t cache_pc) const;
  // The exit whose trap leaves the pc at `cache_pc`, or nullptr.
  const BlockExit* exit_at(uint64_t cache_pc) const;
  // Whether `cache_pc` is a pc_map entry's offset: a stop there needs no
  // repair (see "Stops inside the instrumentation").
  bool at_entry(uint64_t cache_pc) const;
  // The fault point at `cache_pc`, or nullptr.
  const FaultPoint* fault_point_at(uint64_t cache_pc) const;
};

// Translates the block at `address` (`code` holds the bytes from there; a
// few hundred are plenty) into code meant to run at `cache_address`. An
// error when the first instruction cannot be translated (undecodable by
// Capstone and by vex_form(), whose VEX/EVEX forms are copied, or
// one the block would stop before), when a RIP-relative operand cannot
// reach from the cache, or for an instruction that cannot be relocated
// (a relative branch of an unknown kind, an indirect transfer with a
// 16-bit operand or address-size prefix).
btstub::Expected<Translation> translate_block(uint64_t address, std::span<const uint8_t> code,
                                              uint64_t cache_address, const TranslateOptions& options = {});

// Bytes to write into the cache (at `address`), e.g. with the tracer's
// memory writes.
struct CodePatch {
  uint64_t address = 0;
  std::vector<uint8_t> bytes;
};

// The patch that makes Direct exit `exit_index` of `t` jump straight to
// `destination` (another translation's cache address; the exit's own stub
// unlinks it). It rewrites the jump's rel32: 4 bytes, not necessarily
// aligned, so no thread may be running that jump while it is written.
btstub::Expected<CodePatch> link_exit(const Translation& t, std::size_t exit_index, uint64_t destination);

}  // namespace decoder
