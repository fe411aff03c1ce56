// stub/tracing/checkpoints.h: which checkpoint may be re-run to a point.
// The entries hold no copies here (no processes in unit tests).
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "stub/tracing/checkpoints.h"

namespace test_checkpoints {  // this file's own names, apart in a unity build

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

TEST_CASE("no older copy runs to or past a client write; the copy taken after it serves it", "[checkpoints]") {
  Checkpoints checkpoints;
  checkpoints.add(7, {0, 0x100}, nullptr);
  // The client wrote while the thread stood at (5, 0x150).
  checkpoints.client_write(7, {5, 0x150});
  CHECK(checkpoints.usable_for(7, {5, 0x14f}));  // before it
  auto blocked = checkpoints.usable_for(7, {5, 0x150});
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().message.find("client wrote") != std::string::npos);
  CHECK_FALSE(checkpoints.usable_for(7, {9, 0x100}));
  CHECK(checkpoints.first_write(7, {0, 0x100}, {5, 0x150}) == decoder::HistoryPoint{5, 0x150});
  CHECK_FALSE(checkpoints.first_write(7, {5, 0x150}, {9, 0x100}));  // (from, to]: not the copy's own point
  // The copy taken where it resumed, after the write.
  checkpoints.add(7, {5, 0x150}, nullptr);
  CHECK(checkpoints.usable_for(7, {5, 0x150})->at == decoder::HistoryPoint{5, 0x150});
  CHECK(checkpoints.usable_for(7, {9, 0x100})->at == decoder::HistoryPoint{5, 0x150});
  CHECK(checkpoints.usable_for(7, {4, 0x100})->at == decoder::HistoryPoint{0, 0x100});
  checkpoints.drop_before(7, 6);
  CHECK_FALSE(checkpoints.first_write(7, {0, 0}, {9, 0}));
}

TEST_CASE("with several threads a copy serves its thread only up to where another ran", "[checkpoints]") {
  Checkpoints checkpoints;
  std::map<pid_t, uint64_t> progress{{7, 0}, {8, 0}};
  auto progress_of = [&](pid_t tid) -> std::optional<uint64_t> { return progress.at(tid); };
  checkpoints.add(7, {3, 0x100}, nullptr);
  checkpoints.add(7, {6, 0x200}, nullptr);
  checkpoints.add(8, {2, 0x300}, nullptr);
  // Thread 7 runs: its own copies stay open, 8's serves up to block 4 of 8's.
  progress[8] = 4;
  checkpoints.others_run(7, progress_of);
  CHECK(checkpoints.usable_for(7, {50, 0x100}));
  CHECK(checkpoints.usable_for(8, {3, 0x399}));
  auto ran = checkpoints.usable_for(8, {4, 0x300});
  REQUIRE_FALSE(ran);
  CHECK(ran.error().message.find("another thread ran") != std::string::npos);
  CHECK(checkpoints.all(8).front().valid_before == 4u);
  CHECK_FALSE(checkpoints.all(8).front().serves({4, 0}));
  // Thread 8 runs once 7 has finished block 9: both of 7's close there;
  // a later run closes nothing already closed.
  progress[7] = 9;
  checkpoints.others_run(8, progress_of);
  progress[7] = 20;
  checkpoints.others_run(8, progress_of);
  CHECK(checkpoints.usable_for(7, {8, 0x999})->at == decoder::HistoryPoint{6, 0x200});
  CHECK(checkpoints.usable_for(7, {5, 0x0})->at == decoder::HistoryPoint{3, 0x100});
  CHECK_FALSE(checkpoints.usable_for(7, {9, 0x0}));
  // A copy taken after that is open again, the closed ones stay as they were.
  checkpoints.add(7, {12, 0x400}, nullptr);
  CHECK(checkpoints.usable_for(7, {40, 0x0})->at == decoder::HistoryPoint{12, 0x400});
  CHECK_FALSE(checkpoints.usable_for(7, {11, 0x0}));
  progress[7] = 30;
  checkpoints.others_run(8, progress_of);
  CHECK(checkpoints.all(7)[1].valid_before == 9u);
  CHECK(checkpoints.all(7)[2].valid_before == 30u);
}

TEST_CASE("the periodic spacing grows with the history, unless fixed", "[checkpoints]") {
  stub::tracing::CheckpointLimits limits;
  limits.every_branches = 100000;
  Checkpoints grows(limits);
  CHECK(grows.spacing(0) == 100000);
  CHECK(grows.spacing(100000 * 512) == 100000);
  CHECK(grows.spacing(500000000) == 500000000 / 512);
  limits.history_share = 0;
  Checkpoints fixed(limits);
  CHECK(fixed.spacing(500000000) == 100000);
}

TEST_CASE("checkpoints older than the history go; over the count they are thinned", "[checkpoints]") {
  Checkpoints checkpoints(Checkpoints::Limits{3, 100});
  for (uint64_t seq = 0; seq < 5; ++seq) checkpoints.add(1, {seq * 10, 0x100}, nullptr);
  CHECK(checkpoints.count() == 3);
  // The oldest and the two newest stay: the whole history is covered.
  CHECK(checkpoints.usable_for(1, {15, 0x100})->at == decoder::HistoryPoint{0, 0x100});
  CHECK(checkpoints.usable_for(1, {35, 0x100})->at == decoder::HistoryPoint{30, 0x100});
  checkpoints.drop_before(1, 30);
  CHECK(checkpoints.count() == 2);
  CHECK(checkpoints.newest(1)->sequence == 40);
  checkpoints.forget(1);
  CHECK(checkpoints.count() == 0);
}

TEST_CASE("thinned checkpoints cover the whole history, spaced by age", "[checkpoints]") {
  Checkpoints checkpoints(Checkpoints::Limits{100, 700});
  const uint64_t n = 20000;  // 14 million branches of history
  for (uint64_t i = 0; i < n; ++i) checkpoints.add(1, {i * 700, 0x100}, nullptr);
  auto all = checkpoints.all(1);
  REQUIRE(all.size() == 100);
  CHECK(all.front().at.sequence == 0);
  CHECK(all.back().at.sequence == (n - 1) * 700);
  // Every point has a checkpoint before it, and the gaps grow with age:
  // the newest are dense, the oldest far apart (within a quarter of their age).
  for (uint64_t seq = 0; seq < n * 700; seq += 99991) CHECK(checkpoints.usable_for(1, {seq, 0x200}));
  const uint64_t newest = all.back().at.sequence;
  for (std::size_t i = 1; i + 1 < all.size(); ++i) {
    const uint64_t gap = all[i + 1].at.sequence - all[i].at.sequence;
    const uint64_t age = newest - all[i].at.sequence;
    CAPTURE(i, gap, age);
    CHECK(gap <= std::max<uint64_t>(700, age / 4));
  }
  CHECK(all[all.size() - 2].at.sequence == newest - 700);
}

TEST_CASE("a checkpoint right after a barrier is kept while another can go", "[checkpoints]") {
  Checkpoints checkpoints(Checkpoints::Limits{30, 700});
  // A system call before every fourth checkpoint; the others periodic.
  for (uint64_t i = 0; i < 100; ++i) {
    if (i > 0 && i % 4 == 0) checkpoints.barrier(1, {i * 700 - 1, 0x300});
    checkpoints.add(1, {i * 700, 0x100}, nullptr);
  }
  REQUIRE(checkpoints.count() == 30);
  // The 25 that follow a barrier (and the first) stay while periodic ones
  // can go: every point of the history keeps a usable checkpoint.
  auto all = checkpoints.all(1);
  CHECK(all.front().at.sequence == 0);
  for (uint64_t seq = 0; seq < 100 * 700; seq += 97) CHECK(checkpoints.usable_for(1, {seq, 0x200}));
  // Past that, the oldest go: what is left is still covered from its start.
  for (uint64_t i = 100; i < 200; ++i) {
    if (i % 4 == 0) checkpoints.barrier(1, {i * 700 - 1, 0x300});
    checkpoints.add(1, {i * 700, 0x100}, nullptr);
  }
  all = checkpoints.all(1);
  REQUIRE(all.size() == 30);
  CHECK(all.front().at.sequence > 0);
  for (uint64_t seq = all.front().at.sequence; seq < 200 * 700; seq += 97) {
    CHECK(checkpoints.usable_for(1, {seq, 0x200}));
  }
}

TEST_CASE("the memory of many copies is measured on an even sample, oldest and newest included", "[checkpoints]") {
  using stub::tracing::spread_sample;
  CHECK(spread_sample(0, 32).empty());
  CHECK(spread_sample(5, 32) == std::vector<std::size_t>{0, 1, 2, 3, 4});
  CHECK(spread_sample(7, 1) == std::vector<std::size_t>{6});
  const auto sample = spread_sample(1024, Checkpoints::kMeasuredCopies);
  REQUIRE(sample.size() == Checkpoints::kMeasuredCopies);
  CHECK(sample.front() == 0);
  CHECK(sample.back() == 1023);
  for (std::size_t i = 1; i < sample.size(); ++i) {
    CHECK(sample[i] > sample[i - 1]);
    CHECK(sample[i] - sample[i - 1] >= 32);  // 1023 / 31: no two close together
    CHECK(sample[i] - sample[i - 1] <= 34);
  }
}

TEST_CASE("a stretch's shared memory is next known at the first barrier or checkpoint after it", "[checkpoints]") {
  Checkpoints checkpoints;
  checkpoints.add(7, {0, 0x100}, nullptr);
  // Nothing after the checkpoint: the stretch reaches the present.
  CHECK_FALSE(checkpoints.shared_reference(7, {0, 0x100}));
  CHECK_FALSE(checkpoints.shared_reference(8, {0, 0x100}));
  // A system call at (12, 0x210), its digest read before it ran.
  checkpoints.barrier(7, {12, 0x210}, 99);
  auto reference = checkpoints.shared_reference(7, {0, 0x100});
  REQUIRE(reference);
  CHECK(reference->at == decoder::HistoryPoint{12, 0x210});
  CHECK(reference->digest == 99u);
  // A periodic checkpoint before it comes first (its copy holds the digest:
  // none here, so that of no shared memory).
  checkpoints.add(7, {5, 0x180}, nullptr);
  reference = checkpoints.shared_reference(7, {0, 0x100});
  REQUIRE(reference);
  CHECK(reference->at == decoder::HistoryPoint{5, 0x180});
  CHECK(reference->digest == stub::process::shared_memory_digest({}, {}));
  // From the periodic one: the barrier. A barrier whose digest was not read.
  CHECK(checkpoints.shared_reference(7, {5, 0x180})->at == decoder::HistoryPoint{12, 0x210});
  checkpoints.add(7, {12, 0x212}, nullptr);
  checkpoints.barrier(7, {20, 0x300});
  reference = checkpoints.shared_reference(7, {12, 0x212});
  REQUIRE(reference);
  CHECK(reference->at == decoder::HistoryPoint{20, 0x300});
  CHECK_FALSE(reference->digest);
  // Copies holding no shared memory: no barrier needs a digest.
  CHECK(checkpoints.shared_ranges_due(7) == nullptr);
  // Dropped with the history before them.
  checkpoints.drop_before(7, 13);
  CHECK_FALSE(checkpoints.shared_reference(7, {0, 0x100})->digest);
}

TEST_CASE("a filled-in checkpoint goes between the others, never past the count bound", "[checkpoints]") {
  Checkpoints::Limits limits;
  limits.max_count = 4;
  Checkpoints checkpoints(limits);
  checkpoints.add(7, {0, 0x100}, nullptr);
  checkpoints.add(7, {30, 0x200}, nullptr);
  CHECK(checkpoints.fill_in(7, {10, 0x150}, nullptr));
  CHECK(checkpoints.fill_in(7, {20, 0x160}, nullptr));
  CHECK_FALSE(checkpoints.fill_in(7, {25, 0x170}, nullptr));  // the bound: nothing thinned for it
  CHECK(checkpoints.count() == 4);
  CHECK(checkpoints.taken() == 2);
  CHECK(checkpoints.filled_in() == 2);
  std::vector<decoder::HistoryPoint> at;
  for (const auto& usable : checkpoints.all(7)) at.push_back(usable.at);
  CHECK(at == std::vector<decoder::HistoryPoint>{{0, 0x100}, {10, 0x150}, {20, 0x160}, {30, 0x200}});
  CHECK(checkpoints.usable_for(7, {15, 0x100})->at == decoder::HistoryPoint{10, 0x150});
  CHECK(checkpoints.usable_for(7, {29, 0x100})->at == decoder::HistoryPoint{20, 0x160});
  // The recording's next one still goes after the newest.
  CHECK(checkpoints.newest(7) == decoder::HistoryPoint{30, 0x200});
  CHECK(checkpoints.status().find("2 taken in all, 2 filled in later") != std::string::npos);
}

TEST_CASE("a point that has its checkpoint gets no second one", "[checkpoints]") {
  Checkpoints checkpoints;
  checkpoints.add(7, {0, 0x100}, nullptr);
  CHECK_FALSE(checkpoints.fill_in(7, {0, 0x100}, nullptr));
  CHECK(checkpoints.count() == 1);
}

TEST_CASE("a copy meets the repeated calls between where it stands and where it goes, in order", "[checkpoints]") {
  Checkpoints checkpoints;
  checkpoints.add(7, {0, 0x100}, nullptr);
  auto call = [](uint64_t pc, long result) { return stub::process::RepeatedCall{pc, 12, {}, result}; };
  checkpoints.repeated_call(7, {3, 0x200}, call(0x200, 1));
  checkpoints.repeated_call(7, {3, 0x240}, call(0x240, 2));  // the same block, later
  checkpoints.repeated_call(7, {9, 0x200}, call(0x200, 3));
  // No barrier: the checkpoint serves points past them.
  CHECK(checkpoints.usable_for(7, {10, 0x300})->at == decoder::HistoryPoint{0, 0x100});
  using Calls = std::vector<stub::process::RepeatedCall>;
  CHECK(checkpoints.calls(7, {0, 0x100}, {10, 0x300}) == Calls{call(0x200, 1), call(0x240, 2), call(0x200, 3)});
  // Standing at a call: it is still to be made; stopping at one: not made.
  CHECK(checkpoints.calls(7, {3, 0x240}, {9, 0x200}) == Calls{call(0x240, 2)});
  CHECK(checkpoints.calls(7, {3, 0x202}, {3, 0x240}).empty());
  CHECK(checkpoints.calls(8, {0, 0x100}, {10, 0x300}).empty());
  CHECK(checkpoints.calls_repeatable() == 3);
  CHECK(checkpoints.status().find("3 system calls copies make again") != std::string::npos);
  // Gone with the history before them.
  checkpoints.drop_before(7, 5);
  CHECK(checkpoints.calls(7, {0, 0x100}, {10, 0x300}) == Calls{call(0x200, 3)});
}

}  // namespace test_checkpoints
