// x86 debug-register allocation (stub/process/debug_registers.*): DR7 encoding,
// splitting of unaligned regions, sharing, all-or-nothing failure, DR6.
#include <catch2/catch.hpp>

#include "stub/process/debug_registers.h"

namespace test_debug_registers {  // this file's own names, apart in a unity build

using stub::process::DebugHit;
using stub::process::DebugRegisterState;
using stub::process::WatchKind;

namespace {

void require_ok(const btstub::Expected<void>& result) {
  if (!result.ok()) FAIL("unexpected error: " << result.error().message);
}

std::vector<std::pair<uint64_t, uint64_t>> used_slots(const DebugRegisterState& state) {
  // (address, LEN field) of every slot in use, read back through the public
  // API only, so the test checks what the ptrace layer will write.
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (int i = 0; i < DebugRegisterState::kSlotCount; ++i)
    if (state.in_use(i)) out.emplace_back(state.address(i), (state.dr7() >> (18 + 4 * i)) & 3);
  return out;
}

constexpr uint64_t kLen1 = 0, kLen2 = 1, kLen4 = 3, kLen8 = 2;
const std::string kTooMany = "Too many hardware breakpoints/watchpoints: x86 has four debug registers";

}  // namespace

TEST_CASE("Z packet types map to watch kinds", "[debug_registers]") {
  using protocol::BreakpointType;
  CHECK_FALSE(stub::process::watch_kind_for(BreakpointType::Software).has_value());
  CHECK(stub::process::watch_kind_for(BreakpointType::Hardware) == WatchKind::Execute);
  CHECK(stub::process::watch_kind_for(BreakpointType::WriteWatch) == WatchKind::Write);
  CHECK(stub::process::watch_kind_for(BreakpointType::ReadWatch) == WatchKind::Read);
  CHECK(stub::process::watch_kind_for(BreakpointType::AccessWatch) == WatchKind::Access);
}

TEST_CASE("an empty state has DR7 zero and four free slots", "[debug_registers]") {
  DebugRegisterState state;
  CHECK(state.dr7() == 0);
  CHECK(state.empty());
  CHECK(state.free_slots() == 4);
  for (int i = -1; i <= 4; ++i) {
    CHECK_FALSE(state.in_use(i));
    CHECK(state.address(i) == 0);
  }
}

TEST_CASE("DR7 encodes enable, condition and length per slot", "[debug_registers]") {
  SECTION("execute") {
    DebugRegisterState state;
    // Instruction breakpoints need no alignment and always use LEN=00.
    require_ok(state.insert(WatchKind::Execute, 0x401137, 1));
    CHECK(state.address(0) == 0x401137);
    CHECK(state.dr7() == 0x101);  // L0, LE; R/W0=00, LEN0=00
  }
  SECTION("write 4 bytes") {
    DebugRegisterState state;
    require_ok(state.insert(WatchKind::Write, 0x1000, 4));
    CHECK(state.dr7() == 0xd0101);  // R/W0=01, LEN0=11
  }
  SECTION("access 8 bytes") {
    DebugRegisterState state;
    require_ok(state.insert(WatchKind::Access, 0x2000, 8));
    CHECK(state.dr7() == 0xb0101);  // R/W0=11, LEN0=10
  }
  SECTION("read is read/write: x86 has no read-only condition") {
    DebugRegisterState state;
    require_ok(state.insert(WatchKind::Read, 0x2000, 2));
    CHECK(state.dr7() == 0x70101);  // R/W0=11, LEN0=01
  }
  SECTION("all four slots") {
    DebugRegisterState state;
    require_ok(state.insert(WatchKind::Access, 0x2000, 8));  // slot 0: 0x000b0101
    require_ok(state.insert(WatchKind::Write, 0x3002, 2));   // slot 1: 0x00500004
    require_ok(state.insert(WatchKind::Read, 0x4003, 1));    // slot 2: 0x03000010
    require_ok(state.insert(WatchKind::Write, 0x5000, 8));   // slot 3: 0x90000040
    CHECK(state.dr7() == 0x935b0155);
    CHECK(state.address(0) == 0x2000);
    CHECK(state.address(1) == 0x3002);
    CHECK(state.address(2) == 0x4003);
    CHECK(state.address(3) == 0x5000);
    CHECK(state.free_slots() == 0);
  }
}

TEST_CASE("Execute ignores the Z1 kind", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Execute, 0x401000, 4));
  CHECK(state.dr7() == 0x101);
  CHECK(state.free_slots() == 3);
  require_ok(state.remove(WatchKind::Execute, 0x401000, 1));
  CHECK(state.empty());
}

TEST_CASE("unaligned and odd-sized regions are split into aligned pieces", "[debug_registers]") {
  using Slots = std::vector<std::pair<uint64_t, uint64_t>>;
  struct Case {
    uint64_t addr, len;
    Slots expected;
  };
  const Case cases[] = {
      {0x1000, 1, {{0x1000, kLen1}}},
      {0x1001, 2, {{0x1001, kLen1}, {0x1002, kLen1}}},
      {0x1001, 3, {{0x1001, kLen1}, {0x1002, kLen2}}},
      {0x1002, 4, {{0x1002, kLen2}, {0x1004, kLen2}}},
      {0x1004, 8, {{0x1004, kLen4}, {0x1008, kLen4}}},
      {0x1000, 6, {{0x1000, kLen4}, {0x1004, kLen2}}},
      {0x1001, 7, {{0x1001, kLen1}, {0x1002, kLen2}, {0x1004, kLen4}}},
      {0x1003, 10, {{0x1003, kLen1}, {0x1004, kLen4}, {0x1008, kLen4}, {0x100c, kLen1}}},
      {0x1000, 16, {{0x1000, kLen8}, {0x1008, kLen8}}},
      {0x1000, 32, {{0x1000, kLen8}, {0x1008, kLen8}, {0x1010, kLen8}, {0x1018, kLen8}}},
      // The very top of the address space is not a wrap-around.
      {0xfffffffffffffff8, 8, {{0xfffffffffffffff8, kLen8}}},
      {0xfffffffffffffffe, 2, {{0xfffffffffffffffe, kLen2}}},
  };
  for (const auto& c : cases) {
    INFO("addr 0x" << std::hex << c.addr << " len " << std::dec << c.len);
    DebugRegisterState state;
    require_ok(state.insert(WatchKind::Write, c.addr, c.len));
    CHECK(used_slots(state) == c.expected);
    // Every piece is a write watch.
    for (int i = 0; i < 4; ++i)
      if (state.in_use(i)) CHECK(((state.dr7() >> (16 + 4 * i)) & 3) == 1);
    require_ok(state.remove(WatchKind::Write, c.addr, c.len));
    CHECK(state.empty());
    CHECK(state.dr7() == 0);
  }
}

TEST_CASE("regions needing more than four registers are refused", "[debug_registers]") {
  const std::pair<uint64_t, uint64_t> too_big[] = {
      {0x1000, 33}, {0x1001, 32}, {0x1001, 17}, {0x1000, 1ull << 40}, {0, UINT64_MAX}};
  for (auto [addr, len] : too_big) {
    INFO("addr 0x" << std::hex << addr << " len 0x" << len);
    DebugRegisterState state;
    auto result = state.insert(WatchKind::Access, addr, len);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message == kTooMany);
    CHECK(state.empty());
  }
}

TEST_CASE("meaningless regions are invalid arguments", "[debug_registers]") {
  DebugRegisterState state;
  auto zero = state.insert(WatchKind::Write, 0x1000, 0);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().code == btstub::ErrorCode::InvalidArgument);
  auto wrap = state.insert(WatchKind::Write, 0xffffffffffffffff, 2);
  REQUIRE_FALSE(wrap.ok());
  CHECK(wrap.error().code == btstub::ErrorCode::InvalidArgument);
  CHECK(state.empty());
}

TEST_CASE("a failed insert leaves the state unchanged", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 8));
  require_ok(state.insert(WatchKind::Write, 0x2000, 1));
  require_ok(state.insert(WatchKind::Execute, 0x401000, 1));

  SECTION("not enough free slots for every piece") {
    const DebugRegisterState before = state;
    auto result = state.insert(WatchKind::Access, 0x3000, 16);  // needs 2, 1 free
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == btstub::ErrorCode::NotSupported);
    CHECK(result.error().message == kTooMany);
    CHECK(state == before);
    CHECK(state.free_slots() == 1);
  }
  SECTION("a piece that would share a slot does not keep its reference") {
    require_ok(state.insert(WatchKind::Write, 0x4000, 1));
    const DebugRegisterState before = state;
    // First piece (0x1000, 8) shares slot 0, the second has no slot left.
    REQUIRE_FALSE(state.insert(WatchKind::Write, 0x1000, 16).ok());
    CHECK(state == before);
    // Slot 0 is referenced once, so one removal frees it.
    require_ok(state.remove(WatchKind::Write, 0x1000, 8));
    CHECK_FALSE(state.in_use(0));
    // And the refused region was never recorded.
    CHECK_FALSE(state.remove(WatchKind::Write, 0x1000, 16).ok());
  }
}

TEST_CASE("the same watch inserted twice is one, gone with one remove", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 4));
  const DebugRegisterState once = state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 4));
  CHECK(state == once);
  CHECK(state.free_slots() == 3);
  require_ok(state.insert(WatchKind::Execute, 0x2000, 1));
  require_ok(state.insert(WatchKind::Execute, 0x2000, 1));
  CHECK(state.free_slots() == 2);
  require_ok(state.remove(WatchKind::Execute, 0x2000, 1));
  CHECK_FALSE(state.breaks_at(0x2000));
  require_ok(state.remove(WatchKind::Write, 0x1000, 4));
  CHECK(state.empty());
  CHECK(state.dr7() == 0);
  CHECK(state.dr7() == 0);
  auto again = state.remove(WatchKind::Write, 0x1000, 4);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == btstub::ErrorCode::InvalidArgument);
}

TEST_CASE("overlapping regions share identical pieces", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 8));
  require_ok(state.insert(WatchKind::Write, 0x1000, 16));  // (0x1000,8) shared, (0x1008,8) new
  CHECK(state.free_slots() == 2);
  require_ok(state.remove(WatchKind::Write, 0x1000, 8));
  CHECK(state.free_slots() == 2);  // both pieces still needed by the 16-byte watch
  require_ok(state.remove(WatchKind::Write, 0x1000, 16));
  CHECK(state.empty());
}

TEST_CASE("different conditions on one address use different slots", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 4));
  require_ok(state.insert(WatchKind::Access, 0x1000, 4));
  require_ok(state.insert(WatchKind::Execute, 0x1000, 1));
  CHECK(state.free_slots() == 1);
  // Read and access are the same hardware condition and share.
  require_ok(state.insert(WatchKind::Read, 0x1000, 4));
  CHECK(state.free_slots() == 1);
}

TEST_CASE("remove must match an earlier insert exactly", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 16));
  const DebugRegisterState before = state;
  CHECK_FALSE(state.remove(WatchKind::Write, 0x1000, 8).ok());    // a part of it
  CHECK_FALSE(state.remove(WatchKind::Access, 0x1000, 16).ok());  // other kind
  CHECK_FALSE(state.remove(WatchKind::Write, 0x1008, 8).ok());
  CHECK_FALSE(state.remove(WatchKind::Execute, 0x1000, 1).ok());
  auto missing = state.remove(WatchKind::Write, 0x2000, 4);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == btstub::ErrorCode::InvalidArgument);
  CHECK(missing.error().message.find("0x2000") != std::string::npos);
  CHECK(state == before);
}

TEST_CASE("freed slots are reused lowest first and clear() empties", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 1));
  require_ok(state.insert(WatchKind::Write, 0x2000, 1));
  require_ok(state.insert(WatchKind::Write, 0x3000, 1));
  require_ok(state.remove(WatchKind::Write, 0x1000, 1));
  CHECK_FALSE(state.in_use(0));
  CHECK(state.address(0) == 0);
  CHECK((state.dr7() & 0x3) == 0);  // L0/G0 clear
  CHECK(((state.dr7() >> 16) & 0xf) == 0);  // R/W0 and LEN0 clear
  require_ok(state.insert(WatchKind::Access, 0x5000, 2));
  CHECK(state.address(0) == 0x5000);
  state.clear();
  CHECK(state.empty());
  CHECK(state.dr7() == 0);
  CHECK_FALSE(state.remove(WatchKind::Write, 0x2000, 1).ok());
}

TEST_CASE("DR6 maps back to the triggered slots", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Execute, 0x401000, 1));  // slot 0
  require_ok(state.insert(WatchKind::Write, 0x1001, 3));      // slots 1 (0x1001) and 2 (0x1002)
  require_ok(state.insert(WatchKind::Read, 0x3000, 8));       // slot 3

  // DR6 reads back with its reserved bits set; only B0-B3 matter.
  constexpr uint64_t kFixed = 0xffff0ff0;
  CHECK(state.slot_for_dr6(kFixed | 0x1) == 0);
  auto exec = state.hits_for_dr6(kFixed | 0x1);
  REQUIRE(exec.size() == 1);
  CHECK(exec[0].kind == WatchKind::Execute);
  CHECK(exec[0].address == 0x401000);

  auto write = state.hits_for_dr6(kFixed | 0x4);
  REQUIRE(write.size() == 1);
  CHECK(write[0].slot == 2);
  CHECK(write[0].kind == WatchKind::Write);
  CHECK(write[0].address == 0x1002);  // inside the watched 0x1001..0x1003

  auto read = state.hits_for_dr6(0x8);
  REQUIRE(read.size() == 1);
  CHECK(read[0].kind == WatchKind::Read);
  CHECK(read[0].address == 0x3000);

  auto both = state.hits_for_dr6(0x6);
  REQUIRE(both.size() == 2);
  CHECK(both[0].slot == 1);
  CHECK(both[1].slot == 2);
  CHECK(state.slot_for_dr6(0x6) == 1);

  // Single-step (BS) alone, or nothing at all, is not a debug-register hit.
  CHECK(state.hits_for_dr6(kFixed | 0x4000).empty());
  CHECK_FALSE(state.slot_for_dr6(0).has_value());
}

TEST_CASE("DR6 bits of unused slots are ignored", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1000, 4));  // slot 0 only
  CHECK(state.hits_for_dr6(0xe).empty());
  CHECK_FALSE(state.slot_for_dr6(0xe).has_value());
  CHECK(state.slot_for_dr6(0xf) == 0);
}

TEST_CASE("a shared read/access slot reports access while an access watch uses it",
          "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Read, 0x1000, 4));
  require_ok(state.insert(WatchKind::Access, 0x1000, 4));
  CHECK(state.hits_for_dr6(0x1).at(0).kind == WatchKind::Access);
  require_ok(state.remove(WatchKind::Access, 0x1000, 4));
  CHECK(state.hits_for_dr6(0x1).at(0).kind == WatchKind::Read);
  require_ok(state.remove(WatchKind::Read, 0x1000, 4));
  CHECK(state.hits_for_dr6(0x1).empty());
}

TEST_CASE("watches() tells whether a watch covers any byte of a range", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Write, 0x1003, 2));  // pieces 0x1003 (1) and 0x1004 (1)
  require_ok(state.insert(WatchKind::Execute, 0x2000, 1));
  CHECK(state.watches(0x1000, 0x1008));
  CHECK(state.watches(0x1004, 0x1005));
  CHECK(state.watches(0x0ffc, 0x1004));  // ends inside
  CHECK_FALSE(state.watches(0x0ffc, 0x1003));  // ends right before
  CHECK_FALSE(state.watches(0x1005, 0x1010));  // starts right after
  CHECK_FALSE(state.watches(0x2000, 0x2008));  // a Z1 breakpoint is no watch
  require_ok(state.insert(WatchKind::Read, 0x3000, 8));
  CHECK(state.watches(0x3007, 0x3008));
  CHECK_FALSE(DebugRegisterState{}.watches(0, ~uint64_t{0}));
}

TEST_CASE("execute_hits_at: the enabled execute slots at a pc, as DR6 would say", "[debug_registers]") {
  DebugRegisterState state;
  require_ok(state.insert(WatchKind::Execute, 0x401000, 1));  // slot 0
  require_ok(state.insert(WatchKind::Write, 0x601000, 8));    // slot 1, at a data address
  require_ok(state.insert(WatchKind::Execute, 0x402000, 1));  // slot 2
  std::array<uint64_t, 4> address{};
  for (int i = 0; i < 4; ++i) address[i] = state.address(i);
  CHECK(stub::process::execute_hits_at(state.dr7(), address, 0x401000) == 0x1);
  CHECK(stub::process::execute_hits_at(state.dr7(), address, 0x402000) == 0x4);
  // A write watch at the pc is no execute hit; nor is a pc nothing arms.
  CHECK(stub::process::execute_hits_at(state.dr7(), address, 0x601000) == 0);
  CHECK(stub::process::execute_hits_at(state.dr7(), address, 0x403000) == 0);
  // Slot 3 armed (L3, R/W3=00) beside them, as the debug-register tracer does.
  address[3] = 0x401000;
  CHECK(stub::process::execute_hits_at(state.dr7() | (uint64_t{1} << 6), address, 0x401000) == 0x9);
  // An address left in a disabled slot is no hit.
  CHECK(stub::process::execute_hits_at(state.dr7(), address, 0x401000) == 0x1);
}

}  // namespace test_debug_registers
