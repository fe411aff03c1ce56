// x86 debug-register allocation (bookkeeping only; no ptrace here).
#include "protocol/hex_text.h"
#include "stub/process/debug_registers.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace stub::process {
namespace {

using btstub::ErrorCode;
using btstub::Expected;
using btstub::make_error;

// DR7 layout (Intel SDM vol. 3, 17.2.4).
constexpr int kEnableBitsPerSlot = 2;  // Ln at bit 2n, Gn at bit 2n+1
constexpr int kControlShift = 16;      // R/Wn at 16+4n, LENn at 18+4n
constexpr int kControlBitsPerSlot = 4;
constexpr int kLenShift = 2;
// LE ("local exact"): only meaningful on the i386, ignored by later CPUs;
// gdb sets it with every watchpoint, so do we for identical DR7 values. GE
// and the global enables stay clear: our watches are per thread.
constexpr uint64_t kLocalExact = 1u << 8;

constexpr const char* kTooMany = "Too many hardware breakpoints/watchpoints: x86 has four debug registers";

struct Piece {
  uint64_t addr = 0;
  uint64_t len = 0;
};

using protocol::hex;

// DR7 LEN encoding: 00 = 1 byte, 01 = 2, 11 = 4, 10 = 8 (8 is 64-bit only).
uint64_t len_bits(uint64_t len) {
  switch (len) {
    case 2: return 0x1;
    case 4: return 0x3;
    case 8: return 0x2;
    default: return 0x0;
  }
}

uint64_t normalized_length(WatchKind kind, uint64_t len) { return kind == WatchKind::Execute ? 1 : len; }

// Splits [addr, addr+len) into the fewest naturally aligned pieces, taking at
// each step the largest size (8, 4, 2, 1) that is aligned at the current
// address and does not run past the end, as gdb's x86 code does. Stops as
// soon as more pieces than debug registers would be needed, so even a huge
// length costs at most five steps.
Expected<std::vector<Piece>> split_region(uint64_t addr, uint64_t len) {
  if (len == 0) return make_error(ErrorCode::InvalidArgument, "watchpoint length must not be zero");
  if (addr + (len - 1) < addr)
    return make_error(ErrorCode::InvalidArgument, "watched region wraps around the address space");
  std::vector<Piece> pieces;
  while (len > 0) {
    uint64_t size = 8;
    while (size > len || addr % size != 0) size /= 2;
    pieces.push_back(Piece{addr, size});
    if (pieces.size() > static_cast<std::size_t>(DebugRegisterState::kSlotCount))
      return make_error(ErrorCode::NotSupported, kTooMany);
    addr += size;  // may wrap to 0 exactly at the end of the address space
    len -= size;
  }
  return pieces;
}

Expected<std::vector<Piece>> pieces_for(WatchKind kind, uint64_t addr, uint64_t len) {
  // An instruction breakpoint must use LEN=00; the address needs no alignment.
  if (kind == WatchKind::Execute) return std::vector<Piece>{Piece{addr, 1}};
  return split_region(addr, len);
}

}  // namespace

std::optional<WatchKind> watch_kind_for(protocol::BreakpointType type) {
  switch (type) {
    case protocol::BreakpointType::Software: return std::nullopt;
    case protocol::BreakpointType::Hardware: return WatchKind::Execute;
    case protocol::BreakpointType::WriteWatch: return WatchKind::Write;
    case protocol::BreakpointType::ReadWatch: return WatchKind::Read;
    case protocol::BreakpointType::AccessWatch: return WatchKind::Access;
  }
  return std::nullopt;
}

DebugRegisterState::Condition DebugRegisterState::condition_for(WatchKind kind) {
  switch (kind) {
    case WatchKind::Execute: return Condition::Execute;
    case WatchKind::Write: return Condition::Write;
    // No read-only condition exists (R/W=10 means I/O ports, and only with
    // CR4.DE): a read watch has to trap on writes too.
    case WatchKind::Read:
    case WatchKind::Access: return Condition::ReadWrite;
  }
  return Condition::ReadWrite;
}

WatchKind DebugRegisterState::reported_kind(const Slot& slot) {
  switch (slot.condition) {
    case Condition::Execute: return WatchKind::Execute;
    case Condition::Write: return WatchKind::Write;
    case Condition::ReadWrite: break;
  }
  // A read and an access watch on the same piece share one register; the
  // hardware cannot tell which was meant, and access is the wider claim.
  return slot.refs[static_cast<int>(WatchKind::Access)] > 0 ? WatchKind::Access : WatchKind::Read;
}

Expected<void> DebugRegisterState::insert(WatchKind kind, uint64_t addr, uint64_t len) {
  auto pieces = pieces_for(kind, addr, len);
  if (!pieces) return pieces.error();
  const uint64_t norm_len = normalized_length(kind, len);
  const auto same = [&](const Watch& w) { return w.kind == kind && w.addr == addr && w.len == norm_len; };
  // The protocol asks inserts to be idempotent (a packet sent twice): the
  // same watch again changes nothing, and one remove takes it away.
  if (std::any_of(watches_.begin(), watches_.end(), same)) return {};
  const Condition condition = condition_for(kind);
  const int k = static_cast<int>(kind);
  auto slots = slots_;  // work on a copy: all pieces fit or nothing changes
  for (const Piece& piece : *pieces) {
    Slot* target = nullptr;
    for (Slot& slot : slots) {
      if (slot.used() && slot.address == piece.addr && slot.length == piece.len && slot.condition == condition) {
        target = &slot;
        break;
      }
    }
    if (target == nullptr) {
      for (Slot& slot : slots) {
        if (!slot.used()) {
          slot = Slot{piece.addr, piece.len, condition, {}};
          target = &slot;
          break;
        }
      }
    }
    if (target == nullptr) return make_error(ErrorCode::NotSupported, kTooMany);
    ++target->refs[k];
  }
  slots_ = slots;
  watches_.push_back(Watch{kind, addr, norm_len});
  return {};
}

Expected<void> DebugRegisterState::remove(WatchKind kind, uint64_t addr, uint64_t len) {
  const uint64_t norm_len = normalized_length(kind, len);
  auto watch = watches_.begin();
  while (watch != watches_.end() && !(watch->kind == kind && watch->addr == addr && watch->len == norm_len))
    ++watch;
  if (watch == watches_.end())
    return make_error(ErrorCode::InvalidArgument, "no hardware breakpoint/watchpoint of length " +
                                                      std::to_string(norm_len) + " at " + hex(addr));
  auto pieces = pieces_for(kind, addr, len);
  if (!pieces) return pieces.error();  // cannot happen: insert() split it
  const Condition condition = condition_for(kind);
  const int k = static_cast<int>(kind);
  auto slots = slots_;
  for (const Piece& piece : *pieces) {
    Slot* target = nullptr;
    for (Slot& slot : slots) {
      if (slot.used() && slot.address == piece.addr && slot.length == piece.len &&
          slot.condition == condition && slot.refs[k] > 0) {
        target = &slot;
        break;
      }
    }
    if (target == nullptr)
      return make_error(ErrorCode::Internal, "debug register bookkeeping lost a piece at " + hex(piece.addr));
    if (--target->refs[k] == 0 && target->refs == std::array<int, 4>{}) *target = Slot{};
  }
  slots_ = slots;
  watches_.erase(watch);
  return {};
}

void DebugRegisterState::clear() {
  slots_ = {};
  watches_.clear();
}

uint64_t DebugRegisterState::dr7() const {
  uint64_t value = 0;
  for (int i = 0; i < kSlotCount; ++i) {
    const Slot& slot = slots_[i];
    if (!slot.used()) continue;
    const int control = kControlShift + kControlBitsPerSlot * i;
    value |= uint64_t{1} << (kEnableBitsPerSlot * i);
    value |= static_cast<uint64_t>(slot.condition) << control;
    value |= len_bits(slot.length) << (control + kLenShift);
  }
  if (value != 0) value |= kLocalExact;
  return value;
}

uint64_t execute_hits_at(uint64_t dr7, const std::array<uint64_t, 4>& address, uint64_t pc) {
  uint64_t bits = 0;
  for (std::size_t i = 0; i < address.size(); ++i) {
    const bool enabled = ((dr7 >> (kEnableBitsPerSlot * i)) & 3) != 0;
    const uint64_t condition = (dr7 >> (kControlShift + kControlBitsPerSlot * i)) & 3;
    if (enabled && condition == 0 && address[i] == pc) bits |= uint64_t{1} << i;  // R/W 00: execute
  }
  return bits;
}

DebugRegisterState DebugRegisterState::watches_only() const {
  DebugRegisterState out = *this;
  for (Slot& slot : out.slots_) {
    if (slot.used() && slot.condition == Condition::Execute) slot = Slot{};
  }
  std::erase_if(out.watches_, [](const Watch& w) { return w.kind == WatchKind::Execute; });
  return out;
}

bool DebugRegisterState::watches(uint64_t begin, uint64_t end) const {
  for (const Slot& slot : slots_) {
    if (slot.used() && slot.condition != Condition::Execute && slot.address < end &&
        begin < slot.address + slot.length) {
      return true;
    }
  }
  return false;
}

bool DebugRegisterState::breaks_at(uint64_t addr) const {
  for (const Slot& slot : slots_) {
    if (slot.used() && slot.condition == Condition::Execute && slot.address == addr) return true;
  }
  return false;
}

uint64_t DebugRegisterState::address(int slot) const { return in_use(slot) ? slots_[slot].address : 0; }

bool DebugRegisterState::in_use(int slot) const {
  return slot >= 0 && slot < kSlotCount && slots_[slot].used();
}

int DebugRegisterState::free_slots() const {
  int count = 0;
  for (const Slot& slot : slots_) count += slot.used() ? 0 : 1;
  return count;
}

std::vector<DebugHit> DebugRegisterState::hits_for_dr6(uint64_t dr6) const {
  std::vector<DebugHit> hits;
  for (int i = 0; i < kSlotCount; ++i) {
    if (((dr6 >> i) & 1) == 0 || !slots_[i].used()) continue;
    hits.push_back(DebugHit{i, reported_kind(slots_[i]), slots_[i].address});
  }
  return hits;
}

std::optional<int> DebugRegisterState::slot_for_dr6(uint64_t dr6) const {
  auto hits = hits_for_dr6(dr6);
  if (hits.empty()) return std::nullopt;
  return hits.front().slot;
}

}  // namespace stub::process
