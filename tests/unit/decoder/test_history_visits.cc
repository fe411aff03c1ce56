// decoder/history_visits.h: how often a pc runs between two history points.
#include <catch2/catch.hpp>

#include "decoder/history_visits.h"

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
