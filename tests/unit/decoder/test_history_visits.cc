// decoder/history_visits.h: how often a pc runs between two history points.
#include <catch2/catch.hpp>

#include "decoder/history_visits.h"

namespace test_history_visits {  // this file's own names, apart in a unity build

using decoder::BlockTrace;
using decoder::HistoryPoint;
using decoder::visits_between;

namespace {

// A loop: block 0 is [0x100, 0x120] (origin 0x100), then three times
// 0x120 -> 0x108 (blocks [0x108, 0x120]), then live block [0x108, 0x110].
BlockTrace loop_trace() {
  BlockTrace trace(0x100, 64);
  for (int i = 0; i < 4; ++i) trace.append(0x120, 0x108);
  return trace;
}

}  // namespace

TEST_CASE("visits count every pass over the pc, both ends included", "[history_visits]") {
  BlockTrace trace = loop_trace();
  const uint64_t live = 0x110;
  CHECK(visits_between(trace, live, {0, 0x100}, {0, 0x110}) == 1u);
  CHECK(visits_between(trace, live, {0, 0x100}, {3, 0x110}) == 4u);
  CHECK(visits_between(trace, live, {0, 0x100}, {4, 0x110}) == 5u);  // the live block
  // Starting on the pc counts that visit.
  CHECK(visits_between(trace, live, {2, 0x110}, {3, 0x110}) == 2u);
  // Starting past the pc in its block does not.
  CHECK(visits_between(trace, live, {2, 0x118}, {3, 0x110}) == 1u);
  // The start itself.
  CHECK(visits_between(trace, live, {1, 0x108}, {1, 0x108}) == 1u);
}

TEST_CASE("no count from before the history or backwards", "[history_visits]") {
  BlockTrace trace(0x100, 2);  // keeps two branches
  for (int i = 0; i < 4; ++i) trace.append(0x120, 0x108);
  REQUIRE(trace.first_sequence() == 2);
  CHECK_FALSE(visits_between(trace, 0x110, {1, 0x108}, {3, 0x110}));
  CHECK(visits_between(trace, 0x110, {2, 0x108}, {3, 0x110}) == 2u);
  CHECK_FALSE(visits_between(trace, 0x110, {3, 0x110}, {2, 0x110}));
}

TEST_CASE("a block inside the avoided range makes the stretch unrepeatable", "[history_visits]") {
  BlockTrace trace(0x100, 64);
  trace.append(0x104, 0x7000);  // a call into the "vDSO"
  trace.append(0x7010, 0x105);  // its return
  const std::pair<uint64_t, uint64_t> vdso{0x7000, 0x8000};
  CHECK_FALSE(visits_between(trace, 0x110, {0, 0x100}, {2, 0x108}, vdso));
  CHECK(visits_between(trace, 0x110, {2, 0x105}, {2, 0x108}, vdso) == 1u);
  CHECK(visits_between(trace, 0x110, {0, 0x100}, {2, 0x108}) == 1u);
}

TEST_CASE("nth_visit finds the point visits_between counts to", "[history_visits]") {
  BlockTrace trace = loop_trace();
  const uint64_t live = 0x110;
  CHECK(decoder::nth_visit(trace, live, {0, 0x100}, 0x110, 1) == HistoryPoint{0, 0x110});
  CHECK(decoder::nth_visit(trace, live, {0, 0x100}, 0x110, 4) == HistoryPoint{3, 0x110});
  CHECK(decoder::nth_visit(trace, live, {2, 0x118}, 0x110, 1) == HistoryPoint{3, 0x110});
  CHECK(decoder::nth_visit(trace, live, {0, 0x100}, 0x110, 5) == HistoryPoint{4, 0x110});
  CHECK_FALSE(decoder::nth_visit(trace, live, {0, 0x100}, 0x110, 6));
  for (uint64_t n = 1; n <= 5; ++n) {
    auto point = decoder::nth_visit(trace, live, {0, 0x100}, 0x110, n);
    REQUIRE(point);
    CHECK(visits_between(trace, live, {0, 0x100}, *point) == n);
  }
}

TEST_CASE("a re-run jumps into a span where a block after its start begins", "[history_visits]") {
  using decoder::enters_inside;
  BlockTrace trace = loop_trace();  // blocks [0x100,0x120], then [0x108,0x120] x3, live [0x108,0x110]
  const uint64_t live = 0x110;
  // Blocks 1.. begin at 0x108: a span holding 0x108 past its first byte is entered.
  CHECK(enters_inside(trace, live, {0, 0x100}, {3, 0x110}, 0x105, 0x10a));
  CHECK_FALSE(enters_inside(trace, live, {0, 0x100}, {3, 0x110}, 0x109, 0x10e));
  // Block 0 begins before the start, which is the runner's to check.
  CHECK_FALSE(enters_inside(trace, live, {0, 0x100}, {0, 0x118}, 0x101, 0x110));
  CHECK_FALSE(enters_inside(trace, live, {0, 0x104}, {0, 0x118}, 0x101, 0x110));
  // The block of the end point is entered too, the live one included.
  CHECK_FALSE(enters_inside(trace, live, {0, 0x100}, {0, 0x118}, 0x107, 0x109));
  CHECK(enters_inside(trace, live, {0, 0x100}, {1, 0x118}, 0x107, 0x109));
  CHECK(enters_inside(trace, live, {3, 0x110}, {4, 0x108}, 0x107, 0x109));
  // Backwards or outside the history: cannot be told.
  CHECK(enters_inside(trace, live, {3, 0x110}, {1, 0x110}, 0x200, 0x210));
  CHECK(enters_inside(trace, live, {0, 0x100}, {9, 0x110}, 0x200, 0x210));
}

TEST_CASE("a stretch read once answers as the passes over the history do", "[history_visits]") {
  // Blocks: 0 [0x100, 0x120], 1-3 [0x200, 0x210] (a loop), 4 [0x300, 0x310],
  // 5 the live block from 0x200.
  BlockTrace trace(0x100, 64);
  trace.append(0x120, 0x200);
  trace.append(0x210, 0x200);
  trace.append(0x210, 0x200);
  trace.append(0x210, 0x300);
  trace.append(0x310, 0x200);
  const uint64_t live = 0x208;
  auto stretch = decoder::HistoryStretch::read(trace, live, {0, 0x100}, 5);
  REQUIRE(stretch);
  for (HistoryPoint to : {HistoryPoint{0, 0x110}, HistoryPoint{2, 0x200}, HistoryPoint{3, 0x208},
                          HistoryPoint{4, 0x300}, HistoryPoint{5, 0x208}}) {
    INFO(to.sequence << " " << to.pc);
    CHECK(stretch->visits(to) == visits_between(trace, live, {0, 0x100}, to));
    for (auto [low, high] : {std::pair<uint64_t, uint64_t>{0x200, 0x205}, {0x2fe, 0x303}, {0x201, 0x206}}) {
      CHECK(stretch->enters_inside(to, low, high) == decoder::enters_inside(trace, live, {0, 0x100}, to, low, high));
    }
  }
  CHECK_FALSE(stretch->visits({6, 0x200}));  // past the stretch
  CHECK(stretch->touches({4, 0x300}, {0x300, 0x301}));
  CHECK_FALSE(stretch->touches({3, 0x210}, {0x300, 0x301}));
  CHECK_FALSE(stretch->touches({5, 0x208}, {0, 0}));  // an empty range
  CHECK_FALSE(decoder::HistoryStretch::read(trace, live, {0, 0x100}, 6));  // past the history

  // The block starts with the fewest runs of their pc: one per pc.
  auto points = stretch->fewest_visited(1, 4);
  REQUIRE(points.size() == 2);
  CHECK(points[0].at == HistoryPoint{4, 0x300});
  CHECK(points[0].visits == 1u);
  CHECK(points[1].at == HistoryPoint{5, 0x200});  // its latest start
  CHECK(points[1].visits == 4u);
  CHECK(stretch->fewest_visited(1, 1).size() == 1);
  // From a copy standing inside the loop.
  auto later = decoder::HistoryStretch::read(trace, live, {2, 0x200}, 5);
  REQUIRE(later);
  auto from_loop = later->fewest_visited(3, 4);
  REQUIRE(from_loop.size() == 2);
  CHECK(from_loop[1].at == HistoryPoint{5, 0x200});
  CHECK(from_loop[1].visits == 3u);  // blocks 2, 3 and 5
  // Only starts from `first` on.
  auto early = decoder::HistoryStretch::read(trace, live, {0, 0x100}, 3);
  REQUIRE(early);
  auto loop_only = early->fewest_visited(1, 4);
  REQUIRE(loop_only.size() == 1);
  CHECK(loop_only[0].at == HistoryPoint{3, 0x200});
  CHECK(loop_only[0].visits == 3u);
}

TEST_CASE("a stretch answers from any point in it as the passes over the history do", "[history_visits]") {
  // The trace above, with a call into a "vDSO" and its return after the loop.
  BlockTrace trace(0x100, 64);
  trace.append(0x120, 0x200);
  trace.append(0x210, 0x200);
  trace.append(0x210, 0x200);
  trace.append(0x210, 0x7000);
  trace.append(0x7008, 0x300);
  trace.append(0x310, 0x200);
  const uint64_t live = 0x208;
  const std::pair<uint64_t, uint64_t> vdso{0x7000, 0x8000};
  const HistoryPoint first{0, 0x104};
  auto stretch = decoder::HistoryStretch::read(trace, live, first, 6);
  REQUIRE(stretch);
  const std::vector<HistoryPoint> points = {first,       {0, 0x110}, {1, 0x200}, {2, 0x204}, {3, 0x208},
                                            {4, 0x7000}, {5, 0x300}, {5, 0x310}, {6, 0x200}, {6, 0x208}};
  for (HistoryPoint a : points) {
    for (HistoryPoint to : points) {
      INFO(a.sequence << " " << a.pc << " -> " << to.sequence << " " << to.pc);
      CHECK(stretch->visits(a, to) == visits_between(trace, live, a, to));
      CHECK(stretch->visits(a, to, vdso) == visits_between(trace, live, a, to, vdso));
      for (auto [low, high] : {std::pair<uint64_t, uint64_t>{0x200, 0x205}, {0x2fe, 0x303}, {0x201, 0x206}}) {
        CHECK(stretch->enters_inside(a, to, low, high) == decoder::enters_inside(trace, live, a, to, low, high));
      }
    }
    for (uint64_t pc : {uint64_t{0x200}, uint64_t{0x208}, uint64_t{0x300}}) {
      for (uint64_t n = 0; n <= 5; ++n) {
        INFO(a.sequence << " " << a.pc << " pc " << pc << " n " << n);
        CHECK(stretch->nth_visit(a, pc, n) == decoder::nth_visit(trace, live, a, pc, n));
      }
    }
  }
  // Outside it: what the passes would say there is not the stretch's to know.
  CHECK_FALSE(stretch->visits({0, 0x100}, {1, 0x200}));  // before its start
  CHECK(stretch->enters_inside({0, 0x100}, {1, 0x200}, 0x1000, 0x1001));
  CHECK_FALSE(stretch->nth_visit({0, 0x100}, 0x200, 1));
}

TEST_CASE("a gap between two points makes what ran there unknown", "[history_visits]") {
  // The loop of loop_trace twice, a gap (branches lost: how often 0x110
  // ran there is unknown), then the loop twice more; live block [0x108, 0x110].
  for (const decoder::Branch gap : {decoder::Branch{decoder::kGapAddress, 0x108},
                                    decoder::Branch{decoder::kGapAddress, decoder::kGapAddress}}) {
    BlockTrace trace(0x100, 64);
    trace.append(0x120, 0x108);
    trace.append(0x120, 0x108);
    trace.append(gap.from, gap.to);  // branch 2: block 2 ends in the gap
    if (gap.to == decoder::kGapAddress) trace.append(decoder::kGapAddress, 0x108);  // block 3 begins unknown
    const uint64_t after = trace.end_sequence();  // the first block known again
    trace.append(0x120, 0x108);
    trace.append(0x120, 0x108);
    const uint64_t live = 0x110;
    const HistoryPoint start{0, 0x100};
    const HistoryPoint end{trace.end_sequence(), 0x110};
    INFO("gap to 0x" << std::hex << gap.to);
    // Before the gap, and after it, counts are known.
    CHECK(visits_between(trace, live, start, {1, 0x110}) == 2u);
    CHECK(visits_between(trace, live, {after, 0x108}, end) == 3u);
    // Across it they are not: counting it as no visits would send a copy
    // to an earlier pass than the history's.
    CHECK_FALSE(visits_between(trace, live, start, end));
    CHECK_FALSE(decoder::nth_visit(trace, live, start, 0x110, 4));
    CHECK(decoder::nth_visit(trace, live, start, 0x110, 2) == HistoryPoint{1, 0x110});
    // Where a re-run across it may jump is unknown too.
    CHECK(decoder::enters_inside(trace, live, start, end, 0x400, 0x500));
    CHECK_FALSE(decoder::enters_inside(trace, live, {after, 0x108}, end, 0x400, 0x500));

    auto stretch = decoder::HistoryStretch::read(trace, live, start, end.sequence);
    REQUIRE(stretch);
    CHECK_FALSE(stretch->visits(end));
    CHECK(stretch->visits({1, 0x110}) == 2u);
    CHECK(stretch->touches(end, {0x400, 0x500}));
    CHECK_FALSE(stretch->touches({1, 0x110}, {0x400, 0x500}));
    // Points a re-run could stop at: only those before the gap.
    for (const auto& point : stretch->fewest_visited(0, 8)) {
      CHECK(point.at.sequence < 2);
      CHECK(stretch->visits(point.at) == point.visits);
    }
    CHECK(stretch->fewest_visited(after, 8).empty());
  }
}

}  // namespace test_history_visits
