#include <catch2/catch.hpp>

#include <vector>

#include "decoder/replay_history.h"
#include "replay_fixture.h"

namespace test_replay_cursor {  // this file's own names, apart in a unity build

using decoder::ReplayCursor;
using decoder::ReplayStop;
using replay_test::kB0;
using replay_test::kR0;

namespace {

uint64_t read_u64(ReplayCursor& cursor, uint64_t addr, bool* known) {
  auto bytes = cursor.memory(addr, 8);
  uint64_t value = 0;
  *known = true;
  for (std::size_t i = 0; i < 8; ++i) {
    if (!bytes[i]) *known = false;
    value |= static_cast<uint64_t>(bytes[i].value_or(0)) << (8 * i);
  }
  return value;
}

std::optional<uint64_t> slot(ReplayCursor& cursor, uint64_t addr) {
  bool known = false;
  uint64_t value = read_u64(cursor, addr, &known);
  if (!known) return std::nullopt;
  return value;
}

// Moves the cursor to oracle position `n` (0 = oldest) from the live end.
void seek(ReplayCursor& cursor, std::size_t n) {
  cursor.go_live_end();
  for (std::size_t i = replay_test::oracle().size() - 1; i > n; --i) REQUIRE(cursor.step_back() == ReplayStop::Moved);
}

}  // namespace

TEST_CASE("replay walks back and forth over every position with exact rsp/rbp") {
  replay_test::Fixture f;
  const auto points = replay_test::oracle();
  auto trace = replay_test::trace(true);
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  REQUIRE(cursor.at_live_end());
  REQUIRE(cursor.pc() == points.back().pc);

  for (std::size_t n = points.size(); n-- > 0;) {
    CAPTURE(n, points[n].pc);
    REQUIRE(cursor.pc() == points[n].pc);
    auto st = cursor.stack();
    REQUIRE(st.rsp == points[n].rsp);
    REQUIRE(st.rbp == points[n].rbp);
    REQUIRE(cursor.instruction_number().index == n);
    REQUIRE(cursor.instruction_number().total == points.size());
    REQUIRE(cursor.step_back() == (n == 0 ? ReplayStop::HistoryBegin : ReplayStop::Moved));
  }
  // At the start it stays put.
  REQUIRE(cursor.pc() == points.front().pc);
  REQUIRE(cursor.step_back() == ReplayStop::HistoryBegin);
  REQUIRE(cursor.pc() == points.front().pc);

  for (std::size_t n = 1; n < points.size(); ++n) {
    CAPTURE(n);
    REQUIRE(cursor.step_forward() == (n + 1 == points.size() ? ReplayStop::HistoryEnd : ReplayStop::Moved));
    REQUIRE(cursor.pc() == points[n].pc);
    REQUIRE(cursor.stack().rsp == points[n].rsp);
  }
  REQUIRE(cursor.at_live_end());
  REQUIRE(cursor.step_forward() == ReplayStop::HistoryEnd);
}

TEST_CASE("reverse-continue stops at breakpoints in the past and at the start") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  const std::vector<uint64_t> bps = {0x401024, 0x500000};
  const auto points = replay_test::oracle();
  std::vector<std::size_t> expected;  // oracle indices with pc 0x401024, newest first
  for (std::size_t n = points.size(); n-- > 0;) {
    if (points[n].pc == 0x401024) expected.push_back(n);
  }
  REQUIRE(expected.size() == 3);
  for (std::size_t n : expected) {
    REQUIRE(cursor.continue_back(bps) == ReplayStop::Breakpoint);
    REQUIRE(cursor.pc() == 0x401024);
    REQUIRE(cursor.instruction_number().index == n);
    REQUIRE(cursor.stack().rsp == points[n].rsp);
  }
  REQUIRE(cursor.continue_back(bps) == ReplayStop::HistoryBegin);
  REQUIRE(cursor.instruction_number().index == 0);
  REQUIRE(cursor.continue_back(bps) == ReplayStop::HistoryBegin);

  // Forward again: the same three stops in the other order, then the end.
  for (auto it = expected.rbegin(); it != expected.rend(); ++it) {
    REQUIRE(cursor.continue_forward(bps) == ReplayStop::Breakpoint);
    REQUIRE(cursor.instruction_number().index == *it);
  }
  REQUIRE(cursor.continue_forward(bps) == ReplayStop::HistoryEnd);
  REQUIRE(cursor.at_live_end());
}

TEST_CASE("a breakpoint on the oldest instruction is the start of history") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  const auto points = replay_test::oracle();
  const std::vector<uint64_t> bps = {points.front().pc};
  // Every earlier visit of that pc is a breakpoint; the oldest is the start.
  std::size_t visits = 0;
  for (std::size_t n = 1; n + 1 < points.size(); ++n) visits += points[n].pc == points.front().pc;
  for (std::size_t i = 0; i < visits; ++i) REQUIRE(cursor.continue_back(bps) == ReplayStop::Breakpoint);
  REQUIRE(cursor.continue_back(bps) == ReplayStop::HistoryBegin);
  REQUIRE(cursor.instruction_number().index == 0);
  // From within the oldest block too.
  cursor.go_live_end();
  while (cursor.instruction_number().index > 1) REQUIRE(cursor.step_back() == ReplayStop::Moved);
  REQUIRE(cursor.continue_back(bps) == ReplayStop::HistoryBegin);
  REQUIRE(cursor.instruction_number().index == 0);
}

TEST_CASE("a breakpoint at the current instruction does not stop a continue at once") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  const std::vector<uint64_t> bps = {0x401012, 0x401017};  // 0x401017 is the live pc
  REQUIRE(cursor.continue_back(bps) == ReplayStop::Breakpoint);
  REQUIRE(cursor.pc() == 0x401012);
  REQUIRE(cursor.continue_back(bps) == ReplayStop::Breakpoint);
  REQUIRE(cursor.pc() == 0x401012);
  REQUIRE(cursor.instruction_number().index == 21);
  // Forward it meets the live pc's breakpoint as a breakpoint.
  REQUIRE(cursor.continue_forward(bps) == ReplayStop::Breakpoint);
  REQUIRE(cursor.continue_forward(bps) == ReplayStop::Breakpoint);
  REQUIRE(cursor.at_live_end());
}

TEST_CASE("return addresses and saved frame pointers are read as they were") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  const auto points = replay_test::oracle();
  // Position 26: the third call of f, at `push 0x2a` (0x401024).
  seek(cursor, 26);
  REQUIRE(cursor.pc() == 0x401024);
  CHECK(slot(cursor, kR0 - 40) == kR0 - 8);       // f's saved rbp
  CHECK(slot(cursor, kR0 - 32) == 0x401012);      // f's return address
  CHECK(slot(cursor, kR0 - 8) == kB0);            // main's saved rbp
  CHECK(slot(cursor, kR0) == 0x401035);           // main's return address
  CHECK(slot(cursor, kR0 - 16) == std::nullopt);  // main's locals: never pushed
  CHECK(slot(cursor, kR0 + 8) == std::nullopt);   // above the whole history
  CHECK(slot(cursor, kR0 - 48) == std::nullopt);  // below rsp

  seek(cursor, 27);  // after push 0x2a
  CHECK(slot(cursor, kR0 - 48) == 0x2a);
  seek(cursor, 28);  // after pop rax: free, but nothing could store there since
  CHECK(slot(cursor, kR0 - 48) == 0x2a);
  seek(cursor, 29);  // at f's ret: its saved rbp just popped, still in place
  CHECK(slot(cursor, kR0 - 40) == kR0 - 8);
  seek(cursor, 30);  // back in main after the ret: the return address is still there
  CHECK(slot(cursor, kR0 - 32) == 0x401012);
  CHECK(slot(cursor, kR0) == 0x401035);
  seek(cursor, 31);  // `dec ecx` ran with f's frame free: it is stale now
  CHECK(slot(cursor, kR0 - 32) == std::nullopt);
  CHECK(slot(cursor, kR0 - 40) == std::nullopt);
  CHECK(slot(cursor, kR0 - 48) == std::nullopt);
  CHECK(slot(cursor, kR0) == 0x401035);

  // Unaligned and partial reads: 4 bytes of the return address and 4 of
  // the saved rbp at position 26.
  seek(cursor, 26);
  auto bytes = cursor.memory(kR0 - 36, 8);
  for (int i = 0; i < 4; ++i) CHECK(bytes[i] == static_cast<uint8_t>((kR0 - 8) >> (8 * (4 + i))));
  for (int i = 0; i < 4; ++i) CHECK(bytes[4 + i] == static_cast<uint8_t>(0x401012 >> (8 * i)));
  // The live position, main's ret: `leave` popped the saved rbp, and nothing
  // stored since; f's slots went stale with the loop's `dec ecx`.
  cursor.go_live_end();
  CHECK(slot(cursor, kR0) == 0x401035);
  CHECK(slot(cursor, kR0 - 8) == kB0);
  CHECK(slot(cursor, kR0 - 32) == std::nullopt);
}

TEST_CASE("a hardware trace knows rsp/rbp only near the live end") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(false);
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  const auto points = replay_test::oracle();
  REQUIRE(cursor.stack().rsp == kR0);
  REQUIRE(cursor.step_back() == ReplayStop::Moved);  // before leave
  auto st = cursor.stack();
  CHECK_FALSE(st.rsp.has_value());
  CHECK(st.rbp == kR0 - 8);
  seek(cursor, 10);
  CHECK(cursor.stack() == decoder::StackState{});
  CHECK(slot(cursor, kR0) == std::nullopt);
}

TEST_CASE("a dropped-oldest ring starts history at the oldest retained block") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true, 3);  // keeps the last 3 branches
  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  const auto points = replay_test::oracle();
  std::size_t steps = 0;
  while (cursor.step_back() == ReplayStop::Moved) ++steps;
  // Retained: the last jne, call f and ret; the ret before them was
  // dropped, so history starts at its target.
  CHECK(cursor.pc() == 0x401012);
  const std::size_t first = points.size() - 1 - steps;
  CHECK(first == 21);
  CHECK(cursor.stack().rsp == points[first].rsp);  // from the snapshot backward
  CHECK(cursor.instruction_number().index == 0);
  CHECK(cursor.instruction_number().total == points.size() - first);
}

TEST_CASE("a block that does not decode to its end is the start of history") {
  replay_test::Fixture f;
  decoder::BlockTrace trace(0x401030, 64);
  // A bogus first block (ends inside an instruction), then f once.
  trace.append(0x401003, 0x401020, decoder::StackSnapshot{kR0 - 24, kR0 - 8});
  trace.append(0x401028, 0x401012, decoder::StackSnapshot{kR0 - 32, kR0 - 8});
  ReplayCursor cursor(trace, decoder::LiveState{0x401014, {kR0 - 24, kR0 - 8}}, f.cache);
  std::vector<uint64_t> pcs;
  do pcs.push_back(cursor.pc());
  while (cursor.step_back() == ReplayStop::Moved);
  CHECK(pcs == std::vector<uint64_t>{0x401014, 0x401012, 0x401028, 0x401027, 0x401026, 0x401024,
                                     0x401021, 0x401020});
  cursor.go_live_end();
  CHECK(cursor.continue_back({0x401000}) == ReplayStop::HistoryBegin);
  CHECK(cursor.pc() == 0x401020);
  CHECK(cursor.instruction_number().total == 8);
}

TEST_CASE("a fresh cursor's reverse-continue finds the start of history on the way") {
  // The first reverse-continue after a stop no longer walks to the start
  // of history first: it must still stop there, and only there.
  replay_test::Fixture f;
  decoder::BlockTrace trace(0x401030, 64);
  trace.append(0x401003, 0x401020, decoder::StackSnapshot{kR0 - 24, kR0 - 8});  // does not decode
  trace.append(0x401028, 0x401012, decoder::StackSnapshot{kR0 - 32, kR0 - 8});
  const decoder::LiveState live{0x401014, {kR0 - 24, kR0 - 8}};
  {
    ReplayCursor cursor(trace, live, f.cache);
    CHECK(cursor.continue_back({0x401020}) == ReplayStop::HistoryBegin);  // on the oldest instruction
    CHECK(cursor.pc() == 0x401020);
  }
  {
    ReplayCursor cursor(trace, live, f.cache);
    CHECK(cursor.continue_back({0x401024}) == ReplayStop::Breakpoint);
    CHECK(cursor.pc() == 0x401024);
    // Addresses of the block that does not decode are no history.
    CHECK(cursor.continue_back({0x401000, 0x401003}) == ReplayStop::HistoryBegin);
    CHECK(cursor.pc() == 0x401020);
    CHECK(cursor.step_back() == ReplayStop::HistoryBegin);
  }
}

TEST_CASE("an undecodable live pc leaves no history") {
  replay_test::Fixture f;
  decoder::BlockTrace trace(0x401030, 64);
  trace.append(0x401030, 0x900000, decoder::StackSnapshot{kR0 + 8, kB0});
  ReplayCursor cursor(trace, decoder::LiveState{0x900000, {kR0, kB0}}, f.cache);
  CHECK(cursor.pc() == 0x900000);
  CHECK(cursor.step_back() == ReplayStop::HistoryBegin);
  CHECK(cursor.continue_back({0x401030}) == ReplayStop::HistoryBegin);
  CHECK(cursor.at_live_end());
}

TEST_CASE("remembered stack reads give what a fresh walk gives at every position") {
  // gdb reads the same slots at every stop; the cursor remembers fully known
  // reads. Visiting positions back and forth in an order that both reuses
  // and invalidates those memories must not change a single answer.
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  ReplayCursor remembering(trace, replay_test::live(), f.cache);
  const std::size_t count = replay_test::oracle().size();
  const std::vector<uint64_t> slots = {kR0, kR0 - 8, kR0 - 32, kR0 - 40, kR0 - 48, kR0 - 36};
  std::vector<std::size_t> order;
  for (std::size_t n = count; n-- > 0;) order.push_back(n);  // all the way back
  for (std::size_t n = 0; n < count; n += 3) order.push_back(n);  // forward in strides
  for (std::size_t n : {30u, 26u, 31u, 29u, 27u, 33u, 5u, 32u}) order.push_back(n);
  for (std::size_t n : order) {
    if (n >= count) continue;
    seek(remembering, n);
    ReplayCursor fresh(trace, replay_test::live(), f.cache);
    seek(fresh, n);
    for (uint64_t addr : slots) {
      INFO("position " << n << " slot 0x" << std::hex << addr);
      CHECK(remembering.memory(addr, 8) == fresh.memory(addr, 8));
    }
  }
}

TEST_CASE("stack reads passing summed-up runs of history give what a walk gives") {
  // Runs of 1, 2 and 3 blocks: every read at every position, in fresh
  // cursors sharing the summaries (as the cursors of successive stops do),
  // equals the instruction-by-instruction walk's answer.
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  const std::size_t count = replay_test::oracle().size();
  std::vector<uint64_t> slots;
  for (uint64_t a = kR0 - 64; a <= kR0 + 16; a += 4) slots.push_back(a);
  for (uint64_t run : {1u, 2u, 3u})
  for (bool ahead : {false, true}) {
    decoder::HistorySummaries summaries(run);
    summaries.use_for(trace);
    if (ahead) {
      // As ReplayEngine::sum_up_histories does at a live stop: every whole
      // run, before any read.
      ReplayCursor live(trace, replay_test::live(), f.cache, &summaries);
      CHECK(live.sum_up_runs() == trace.end_sequence() / run);
      CHECK(live.sum_up_runs() == 0);
      for (uint64_t r = 0; r < trace.end_sequence() / run; ++r) CHECK(summaries.find(r) != nullptr);
      CHECK(summaries.find(trace.end_sequence() / run) == nullptr);  // not whole yet
    }
    for (std::size_t n = count; n-- > 0;) {
      ReplayCursor summed(trace, replay_test::live(), f.cache, &summaries);
      seek(summed, n);
      ReplayCursor walking(trace, replay_test::live(), f.cache);
      seek(walking, n);
      for (uint64_t addr : slots) {
        for (std::size_t len : {1u, 8u}) {
          INFO("run " << run << (ahead ? " summed up ahead" : "") << " position " << n << " slot 0x" << std::hex
                       << addr << " len " << len);
          CHECK(summed.memory(addr, len) == walking.memory(addr, len));
        }
      }
    }
  }
}

TEST_CASE("summing up runs skips the runs summed up already and stops where a sweep finished") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  decoder::HistorySummaries summaries(2);
  summaries.use_for(trace);
  const uint64_t whole = trace.end_sequence() / 2;
  REQUIRE(whole >= 3);
  // Summed up by a read that passed it: the others are still to do.
  summaries.put(whole - 2, decoder::RunSummary{});
  ReplayCursor live(trace, replay_test::live(), f.cache, &summaries);
  CHECK_FALSE(live.all_summed_up());
  CHECK(live.sum_up_runs() == whole - 1);
  CHECK(live.all_summed_up());
  CHECK(summaries.complete_below() == whole);
  for (uint64_t r = 0; r < whole; ++r) CHECK(summaries.find(r) != nullptr);
  CHECK(live.sum_up_runs() == 0);
  // A sweep that finished goes no further down than where it finished:
  // runs below it are never looked at again (forgotten here to show it).
  decoder::HistorySummaries later(2);
  later.use_for(trace);
  later.set_complete_below(whole - 1);
  ReplayCursor next(trace, replay_test::live(), f.cache, &later);
  CHECK(next.sum_up_runs() == 1);
  CHECK(later.find(whole - 1) != nullptr);
  CHECK(later.find(whole - 2) == nullptr);
  ReplayCursor without(trace, replay_test::live(), f.cache);
  CHECK(without.sum_up_runs() == 0);
  CHECK(without.all_summed_up());
}

TEST_CASE("summing up a few runs at a time goes newest first and ends where a whole sweep would") {
  // As the session does in the client's idle time: two runs per turn,
  // each turn a fresh cursor sharing the summaries, until none is left.
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  decoder::HistorySummaries summaries(1);
  summaries.use_for(trace);
  const uint64_t whole = trace.end_sequence();
  REQUIRE(whole >= 5);
  uint64_t turns = 0, made = 0;
  for (;;) {
    ReplayCursor live(trace, replay_test::live(), f.cache, &summaries);
    if (live.all_summed_up()) break;
    const std::size_t now = live.sum_up_runs(2);
    CHECK(now <= 2);
    made += now;
    // Newest first: the runs made so far are the newest `made`.
    for (uint64_t r = 0; r < whole; ++r) CHECK((summaries.find(r) != nullptr) == (r >= whole - made));
    REQUIRE(++turns <= whole);
  }
  CHECK(made == whole);
  CHECK(turns == (whole + 1) / 2);
  // The same summaries as one sweep makes.
  decoder::HistorySummaries at_once(1);
  at_once.use_for(trace);
  ReplayCursor one(trace, replay_test::live(), f.cache, &at_once);
  CHECK(one.sum_up_runs() == whole);
  for (uint64_t r = 0; r < whole; ++r) {
    const decoder::RunSummary* a = summaries.find(r);
    const decoder::RunSummary* b = at_once.find(r);
    REQUIRE((a != nullptr && b != nullptr));
    CHECK(a->passable == b->passable);
    CHECK(a->write_low == b->write_low);
    CHECK(a->write_high == b->write_high);
    CHECK(a->unseen_rsp_max == b->unseen_rsp_max);
  }
}

TEST_CASE("summaries are forgotten for another trace") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  decoder::HistorySummaries summaries(1);
  summaries.use_for(trace);
  summaries.put(0, decoder::RunSummary{true, 0, 0, 0});
  summaries.use_for(trace);
  CHECK(summaries.find(0) != nullptr);
  auto other = replay_test::trace(true);
  summaries.use_for(other);
  CHECK(summaries.find(0) == nullptr);
}

TEST_CASE("moves stop where a signal was delivered, in both directions", "[signals]") {
  replay_test::Fixture f;
  auto trace = replay_test::trace(true);
  const auto points = replay_test::oracle();
  std::vector<std::size_t> at_pop, at_jne;  // oracle indices
  for (std::size_t n = 0; n < points.size(); ++n) {
    if (points[n].pc == 0x401026) at_pop.push_back(n);
    if (points[n].pc == 0x401014) at_jne.push_back(n);
  }
  // A signal in the middle of a block (the second pop rax: no handler, it
  // ran on) and one at a block's last instruction (the first jne, as a
  // delivery to a handler ends a block).
  const std::size_t newer = at_pop[1], older = at_jne[0];
  REQUIRE(older < newer);
  decoder::ReplayPosition newer_at, older_at;
  {
    ReplayCursor finder(trace, replay_test::live(), f.cache);
    seek(finder, newer);
    newer_at = finder.position();
    seek(finder, older);
    older_at = finder.position();
  }
  trace.mark_signal(newer_at.sequence, 0x401026, 14);
  trace.mark_signal(older_at.sequence, 0x401014, 10);
  CHECK(trace.signal_in(newer_at.sequence));
  CHECK_FALSE(trace.signal_in(older_at.sequence + 1));

  ReplayCursor cursor(trace, replay_test::live(), f.cache);
  REQUIRE(cursor.continue_back({}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 14);
  REQUIRE(cursor.continue_back({}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == older);
  CHECK(cursor.signal() == 10);
  REQUIRE(cursor.continue_back({}) == ReplayStop::HistoryBegin);
  CHECK(cursor.signal() == 0);

  REQUIRE(cursor.continue_forward({}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == older);
  // A breakpoint before the next signal stops first.
  REQUIRE(cursor.continue_forward({0x401024}) == ReplayStop::Breakpoint);
  CHECK(cursor.instruction_number().index == newer - 1);
  REQUIRE(cursor.continue_forward({0x401024}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == newer);
  REQUIRE(cursor.continue_forward({0x401024}) == ReplayStop::Breakpoint);
  REQUIRE(cursor.continue_forward({}) == ReplayStop::HistoryEnd);

  // Steps arriving there say so too. The delivery is a step of its own,
  // as in record full: back from there, the pc stays (before the
  // delivery); forward again, the signal is delivered again.
  seek(cursor, newer + 1);
  CHECK(cursor.step_back() == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.step_back() == ReplayStop::Moved);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 0);
  CHECK(cursor.step_forward() == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 14);
  CHECK(cursor.step_forward() == ReplayStop::Moved);
  CHECK(cursor.instruction_number().index == newer + 1);
  CHECK(cursor.step_back() == ReplayStop::Signal);
  CHECK(cursor.step_back() == ReplayStop::Moved);
  CHECK(cursor.step_back() == ReplayStop::Moved);
  CHECK(cursor.instruction_number().index == newer - 1);
  // A forward step arrives before the delivery; the next step delivers it.
  CHECK(cursor.step_forward() == ReplayStop::Moved);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 0);
  CHECK(cursor.step_forward() == ReplayStop::Signal);
  CHECK(cursor.signal() == 14);
  // From before the delivery a continue delivers it first, too.
  CHECK(cursor.step_back() == ReplayStop::Moved);
  CHECK(cursor.continue_forward({}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.continue_forward({}) == ReplayStop::HistoryEnd);

  // A breakpoint where a signal was delivered (a thread stood at it when
  // the signal came): continues stop at it before the delivery, both ways.
  seek(cursor, newer + 1);
  REQUIRE(cursor.continue_back({0x401026}) == ReplayStop::Signal);  // first the delivery, later in time
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 14);
  REQUIRE(cursor.continue_back({0x401026}) == ReplayStop::Breakpoint);  // then the breakpoint, before it
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 0);
  REQUIRE(cursor.continue_forward({0x401026}) == ReplayStop::Signal);  // from there forward: the delivery
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 14);
  CHECK(cursor.step_back() == ReplayStop::Moved);  // a step back from it stands before it again
  CHECK(cursor.signal() == 0);
  CHECK(cursor.step_back() == ReplayStop::Moved);
  CHECK(cursor.instruction_number().index == newer - 1);
  REQUIRE(cursor.continue_forward({0x401026}) == ReplayStop::Breakpoint);  // forward: the breakpoint first
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 0);
  REQUIRE(cursor.continue_forward({0x401026}) == ReplayStop::Signal);  // then the delivery
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 14);
  // From an older block, by the block scan: the same order.
  REQUIRE(cursor.continue_back({}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == older);
  REQUIRE(cursor.continue_forward({0x401026}) == ReplayStop::Breakpoint);
  CHECK(cursor.instruction_number().index == newer);
  CHECK(cursor.signal() == 0);
  REQUIRE(cursor.continue_forward({0x401026}) == ReplayStop::Signal);
  CHECK(cursor.instruction_number().index == newer);

  // A signal the thread is being given at its live pc (a crash held at
  // its end) is not in the history yet: the first step back moves.
  trace.mark_signal(trace.end_sequence(), replay_test::live().pc, 11);
  {
    ReplayCursor at_end(trace, replay_test::live(), f.cache);
    CHECK(at_end.signal() == 0);
    CHECK(at_end.step_back() == ReplayStop::Moved);
    CHECK(at_end.instruction_number().index == points.size() - 2);
  }

  // Marks go with their blocks.
  trace.clear(0x401030);
  CHECK(trace.signal_at(newer_at.sequence, 0x401026) == 0);
}

TEST_CASE("a long continue calls its turn every kTurnBlocks blocks and stops where the turn says", "[turns]") {
  replay_test::Fixture f;
  // main calling f over and over: call, ret, jne back to the call.
  decoder::BlockTrace trace(0x401030, 1 << 20);
  trace.append(0x401030, 0x401000);
  const int rounds = 50000;  // 150,001 blocks behind the live one
  for (int i = 0; i < rounds; ++i) {
    trace.append(0x40100d, 0x401020);
    trace.append(0x401028, 0x401012);
    trace.append(0x401014, 0x40100d);
  }
  const decoder::LiveState live{0x40100d, {}};  // at the call again
  const uint64_t end = trace.end_sequence();
  {
    ReplayCursor cursor(trace, live, f.cache);
    std::vector<std::pair<uint64_t, uint64_t>> turns;
    decoder::ScanTurn count = [&](uint64_t scanned, uint64_t most) {
      turns.emplace_back(scanned, most);
      return true;
    };
    CHECK(cursor.continue_back({}, count) == ReplayStop::HistoryBegin);
    CHECK(cursor.pc() == 0x401030);
    REQUIRE(turns.size() == end / ReplayCursor::kTurnBlocks);
    for (std::size_t i = 0; i < turns.size(); ++i) {
      CHECK(turns[i].first == (i + 1) * ReplayCursor::kTurnBlocks - 1);
      CHECK(turns[i].second == end);
    }
    turns.clear();
    CHECK(cursor.continue_forward({}, count) == ReplayStop::HistoryEnd);
    CHECK(turns.size() == end / ReplayCursor::kTurnBlocks);
  }
  {
    ReplayCursor cursor(trace, live, f.cache);
    decoder::ScanTurn stop = [](uint64_t, uint64_t) { return false; };
    CHECK(cursor.continue_back({}, stop) == ReplayStop::Interrupted);
    // At the first instruction of the block the scan had reached.
    const uint64_t at = end - (ReplayCursor::kTurnBlocks - 1);
    CHECK(cursor.position().sequence == at);
    CHECK(cursor.position().index == 0);
    CHECK(cursor.pc() == trace.at(at - 1).to);
    // Moves go on from there, both ways.
    CHECK(cursor.step_back() == ReplayStop::Moved);
    CHECK(cursor.pc() == trace.at(at - 1).from);
    CHECK(cursor.continue_back({}) == ReplayStop::HistoryBegin);
    CHECK(cursor.continue_forward({}, stop) == ReplayStop::Interrupted);
    CHECK(cursor.position().sequence == ReplayCursor::kTurnBlocks);
    CHECK(cursor.position().index == 0);
    CHECK(cursor.continue_forward({}) == ReplayStop::HistoryEnd);
    CHECK(cursor.at_live_end());
  }
}

TEST_CASE("a block whose code was rewritten since it ran is the start of history") {
  replay_test::Fixture f;
  // Each block's layout as it ran, noted as the tracer notes it for code
  // that may change (a JIT's); block 5 (f's second run) is noted as having
  // run another layout than the code holds now.
  auto noted = [&](std::optional<uint64_t> rewritten) {
    decoder::BlockTrace trace = replay_test::trace(true);
    for (uint64_t seq = trace.first_sequence(); seq < trace.end_sequence(); ++seq) {
      const decoder::Block block{seq == 0 ? trace.oldest_begin() : trace.at(seq - 1).to, trace.at(seq).from};
      const std::optional<uint64_t> layout = f.cache.layout_hash_of(block);
      REQUIRE(layout);
      trace.note_block_code(seq, rewritten == seq ? *layout ^ 1 : *layout);
    }
    return trace;
  };
  auto walk_back = [&](const decoder::BlockTrace& trace) {
    ReplayCursor cursor(trace, replay_test::live(), f.cache);
    std::vector<uint64_t> pcs;
    do pcs.push_back(cursor.pc());
    while (cursor.step_back() == ReplayStop::Moved);
    return pcs;
  };
  // Unchanged: the whole run, as without notes.
  const decoder::BlockTrace same = noted(std::nullopt);
  REQUIRE(same.block_code(5));
  CHECK(walk_back(same).size() == replay_test::oracle().size());
  // Rewritten: today's instructions are not what ran there; history
  // begins after it, at f's second return (0x401012).
  const decoder::BlockTrace changed = noted(5);
  const std::vector<uint64_t> pcs = walk_back(changed);
  CHECK(pcs.size() == 13);
  CHECK(pcs.back() == 0x401012);
  // A note for a branch no longer held is not kept.
  decoder::BlockTrace ring(0x401030, 2);
  ring.append(0x401030, 0x401000);
  ring.note_block_code(0, 7);
  ring.append(0x40100d, 0x401020);
  ring.append(0x401028, 0x401012);
  CHECK_FALSE(ring.block_code(0));
  ring.note_block_code(2, 9);
  CHECK(ring.block_code(2) == 9u);
  CHECK_FALSE(ring.block_code(1));
}

TEST_CASE("a block's layout: equal for equal decodings, another for moved instructions or pushed values") {
  replay_test::Fixture f;
  const decoder::Block f_run{0x401020, 0x401028};
  const std::optional<uint64_t> ran = f.cache.layout_hash_of(f_run);
  REQUIRE(ran);
  CHECK(f.cache.layout_hash_of(f_run) == ran);
  auto layout_with = [&](std::vector<uint8_t> f_bytes) {
    std::vector<uint8_t> code = replay_test::code();
    std::copy(f_bytes.begin(), f_bytes.end(), code.begin() + 0x20);
    decoder::BufferReader reader(replay_test::kBase, code.data(), code.size());
    decoder::BlockCache cache(f.decoder, reader);
    return cache.layout_hash_of(f_run);
  };
  // push 0x2a -> push 0x2b: a pushed value replay would show.
  CHECK(layout_with({0x55, 0x48, 0x89, 0xe5, 0x6a, 0x2b, 0x58, 0x5d, 0xc3}) != ran);
  // mov rbp, rsp; push 0x2a -> push 0x2a (2 bytes) and a 3-byte nop: the
  // same end, instructions moved.
  CHECK(layout_with({0x55, 0x6a, 0x2a, 0x0f, 0x1f, 0x00, 0x58, 0x5d, 0xc3}) != ran);
  // The same instructions: the same layout.
  CHECK(layout_with({0x55, 0x48, 0x89, 0xe5, 0x6a, 0x2a, 0x58, 0x5d, 0xc3}) == ran);
}

}  // namespace test_replay_cursor
