#pragma once
// Allocation of the four x86 debug registers (DR0-DR3, controlled by DR7) to
// hardware breakpoints and watchpoints, as pure bookkeeping: this file makes
// no system calls. The ptrace layer copies address(i) into DRi and dr7() into
// DR7 of every thread, and hands DR6 back to hits_for_dr6() after a SIGTRAP.
// Rules: Intel SDM vol. 3, 17.2 (debug registers).
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/expected.h"
#include "protocol/requests.h"

namespace stub::process {

// Z1 = Execute (hardware breakpoint), Z2 = Write, Z3 = Read, Z4 = Access.
enum class WatchKind { Execute, Write, Read, Access };

// The watch kind of a Z/z packet type; nullopt for software breakpoints.
std::optional<WatchKind> watch_kind_for(protocol::BreakpointType type);

// x86 cannot trap on reads alone. gdbserver therefore refuses Z3 (empty
// reply), and gdb falls back to an access watchpoint and filters out hits
// that changed the value. A stub that accepts Z3 instead (Read below maps to
// read/write) also stops on writes to an `rwatch` region.
inline constexpr bool kHasReadOnlyWatchpoints = false;

// One triggered debug register, decoded from DR6.
struct DebugHit {
  int slot = 0;
  WatchKind kind = WatchKind::Execute;
  // DRi: the start of the aligned piece that triggered, which lies inside
  // the region gdb asked for; this is what the stop reply's watch:ADDR
  // carries (gdb matches it against its watchpoints' ranges).
  uint64_t address = 0;
};

// The B0-B3 bits, as DR6 holds them, of the slots that `dr7` enables to
// trap on executing `pc` (DR0-DR3 holding `address`): what DR6 says at a
// hit there. For a stop whose DR6 came without them (ptrace_events.cc).
uint64_t execute_hits_at(uint64_t dr7, const std::array<uint64_t, 4>& address, uint64_t pc);

class DebugRegisterState {
 public:
  static constexpr int kSlotCount = 4;

  // Watches [addr, addr+len). Unaligned or odd-sized regions are split into
  // naturally aligned pieces of 1, 2, 4 or 8 bytes, one slot each; a piece
  // identical to one already installed (same address, size and hardware
  // condition) shares its slot. All or nothing: on error nothing changes.
  // The same watch (kind, address, length) again is a no-op (Z packets are
  // idempotent, as gdbserver's).
  // Execute ignores `len` (gdb's Z1 kind is the breakpoint instruction size)
  // and always uses one byte, the only length x86 allows for it.
  btstub::Expected<void> insert(WatchKind kind, uint64_t addr, uint64_t len);
  // Takes away the watch an insert() with exactly the same arguments made.
  btstub::Expected<void> remove(WatchKind kind, uint64_t addr, uint64_t len);
  void clear();

  // DR7 for this configuration: 0 when nothing is installed.
  uint64_t dr7() const;
  // The same configuration without its execute slots (Z1): the watches
  // alone, as a copy of the program re-run through the past arms them.
  DebugRegisterState watches_only() const;
  // Bytes watched by slot i (1, 2, 4 or 8); 0 for an unused slot.
  uint64_t length(int slot) const { return in_use(slot) ? slots_[slot].length : 0; }
  // DRi for slot i; 0 for an unused slot or an index outside 0..3.
  uint64_t address(int slot) const;
  bool in_use(int slot) const;
  int free_slots() const;
  bool empty() const { return free_slots() == kSlotCount; }
  // Whether a watch (not a Z1 breakpoint) covers any byte of [begin, end).
  bool watches(uint64_t begin, uint64_t end) const;
  // Whether a Z1 breakpoint is at `addr`.
  bool breaks_at(uint64_t addr) const;

  // Slots whose B0-B3 bit is set in `dr6` and that are in use. The CPU may
  // set Bn for a register that DR7 does not enable, so unused slots are
  // never reported. Empty for a single-step trap (BS) alone.
  std::vector<DebugHit> hits_for_dr6(uint64_t dr6) const;
  std::optional<int> slot_for_dr6(uint64_t dr6) const;

  friend bool operator==(const DebugRegisterState&, const DebugRegisterState&) = default;

 private:
  // Hardware condition (DR7 R/W field).
  enum class Condition : uint8_t { Execute = 0, Write = 1, ReadWrite = 3 };
  struct Slot {
    uint64_t address = 0;
    uint64_t length = 0;  // 1, 2, 4 or 8; 0 when free
    Condition condition = Condition::Execute;
    std::array<int, 4> refs{};  // references per WatchKind
    bool used() const { return length != 0; }
    friend bool operator==(const Slot&, const Slot&) = default;
  };
  // One insert() as gdb asked for it, for exact matching on remove().
  struct Watch {
    WatchKind kind = WatchKind::Execute;
    uint64_t addr = 0;
    uint64_t len = 0;
    friend bool operator==(const Watch&, const Watch&) = default;
  };

  static Condition condition_for(WatchKind kind);
  static WatchKind reported_kind(const Slot& slot);

  std::array<Slot, kSlotCount> slots_{};
  std::vector<Watch> watches_;
};

}  // namespace stub::process
