// stub/tracing/checkpoints.h: which checkpoint may be re-run to a point.
// The entries hold no copies here (no processes in unit tests).
#include <catch2/catch.hpp>

#include "stub/tracing/checkpoints.h"

using stub::tracing::Checkpoints;

TEST_CASE("the newest checkpoint at or before the point, unless a barrier lies between", "[checkpoints]") {
  Checkpoints checkpoints;
  checkpoints.add(7, {0, 0x100}, nullptr);
  checkpoints.add(7, {10, 0x200}, nullptr);
  CHECK_FALSE(checkpoints.usable_for(7, {0, 0x0ff}));
  CHECK(checkpoints.usable_for(7, {0, 0x100})->at == decoder::HistoryPoint{0, 0x100});
  CHECK(checkpoints.usable_for(7, {9, 0x300})->at == decoder::HistoryPoint{0, 0x100});
  CHECK(checkpoints.usable_for(7, {10, 0x200})->at == decoder::HistoryPoint{10, 0x200});
  CHECK_FALSE(checkpoints.usable_for(8, {10, 0x200}));

  // A system call at (12, 0x210): its checkpoint comes after it.
  checkpoints.barrier(7, {12, 0x210});
  CHECK(checkpoints.usable_for(7, {12, 0x210}));  // stopped before it runs
  auto blocked = checkpoints.usable_for(7, {12, 0x212});
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().message.find("system call") != std::string::npos);
  checkpoints.add(7, {12, 0x212}, nullptr);
  CHECK(checkpoints.usable_for(7, {20, 0x100})->at == decoder::HistoryPoint{12, 0x212});
}

TEST_CASE("checkpoints older than the history, or over the count, go", "[checkpoints]") {
  Checkpoints checkpoints(Checkpoints::Limits{3, 100});
  for (uint64_t seq = 0; seq < 5; ++seq) checkpoints.add(1, {seq * 10, 0x100}, nullptr);
  CHECK(checkpoints.count() == 3);
  CHECK_FALSE(checkpoints.usable_for(1, {15, 0x100}));
  CHECK(checkpoints.usable_for(1, {25, 0x100}));
  checkpoints.drop_before(1, 30);
  CHECK(checkpoints.count() == 2);
  CHECK(checkpoints.newest(1)->sequence == 40);
  checkpoints.forget(1);
  CHECK(checkpoints.count() == 0);
}
