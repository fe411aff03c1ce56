// Which CPU btstub binds itself to: /proc/stat parsing and the choice of the
// CPU that was idle longest (stub/server/cpu_choice.h).
#include <catch2/catch.hpp>

#include "stub/server/cpu_choice.h"

namespace test_cpu_choice {  // this file's own names, apart in a unity build

using stub::server::idle_ticks_by_cpu;
using stub::server::quietest_cpu;

TEST_CASE("idle ticks per CPU come from the cpuN lines of /proc/stat", "[cpu_choice]") {
  const char* stat =
      "cpu  1816743 0 349019 438250 1325 0 6834 7288 0 0\n"
      "cpu0 936378 0 180888 184695 797 0 3279 3790 0 0\n"
      "cpu1 880365 0 168130 253554 528 0 3555 3498 0 0\n"
      "cpu7 1 2 3\n"  // too short: skipped
      "intr 123 4 5\n"
      "ctxt 4242\n";
  auto idle = idle_ticks_by_cpu(stat);
  CHECK(idle == std::map<int, unsigned long long>{{0, 184695 + 797}, {1, 253554 + 528}});
  CHECK(idle_ticks_by_cpu("").empty());
  CHECK(idle_ticks_by_cpu("cpux 1 2 3 4 5\ncpu-1 1 2 3 4 5\n").empty());
}

TEST_CASE("the CPU idle longest between the samples is chosen", "[cpu_choice]") {
  const std::map<int, unsigned long long> before{{0, 100}, {1, 200}, {2, 300}};
  // CPU 0 was busy throughout (another btstub recording), 1 idle, 2 half.
  const std::map<int, unsigned long long> after{{0, 100}, {1, 202}, {2, 301}};
  CHECK(quietest_cpu(before, after, {0, 1, 2}, 0) == 1);
  CHECK(quietest_cpu(before, after, {0, 2}, 0) == 2);  // only the allowed ones
  CHECK(quietest_cpu(before, after, {0}, 0) == 0);
  CHECK(quietest_cpu(before, after, {}, 0) == std::nullopt);
}

TEST_CASE("ties and missing samples keep the CPU btstub runs on", "[cpu_choice]") {
  const std::map<int, unsigned long long> before{{0, 100}, {1, 200}};
  const std::map<int, unsigned long long> idle_both{{0, 102}, {1, 202}};
  CHECK(quietest_cpu(before, idle_both, {0, 1}, 1) == 1);
  CHECK(quietest_cpu(before, idle_both, {0, 1}, 0) == 0);
  // No /proc/stat (or a CPU missing from it): no basis for a move.
  CHECK(quietest_cpu({}, {}, {0, 1}, 1) == 1);
  CHECK(quietest_cpu(before, {{0, 102}}, {0, 1}, 1) == 1);
  // Counters that went backwards are not believed either.
  CHECK(quietest_cpu(before, {{0, 50}, {1, 202}}, {0, 1}, 0) == 0);
  // The current CPU not allowed (a stale sched_getcpu): the first allowed.
  CHECK(quietest_cpu({}, {}, {2, 3}, 0) == 2);
}

TEST_CASE("the packing workers go to the spare CPUs, one more at idle priority beside the tracer", "[cpu_choice]") {
  using stub::server::packer_placement;
  // Pinned to CPU 0 of two: one worker on CPU 1, the idle one on CPU 0.
  auto two = packer_placement(0, {1}, 2);
  CHECK(two.cpus == std::vector<int>{1});
  CHECK(two.workers == 1);
  CHECK(two.idle_worker);
  CHECK(two.idle_cpus == std::vector<int>{0});
  // Many spare CPUs: at most kMaxPackers workers there.
  auto many = packer_placement(3, {0, 1, 2, 4, 5, 6, 7}, 8);
  CHECK(many.cpus == std::vector<int>{0, 1, 2, 4, 5, 6, 7});
  CHECK(many.workers == stub::server::kMaxPackers);
  CHECK(many.idle_cpus == std::vector<int>{3});
  // One CPU for everything: one worker beside the tracer, none idle.
  auto one = packer_placement(2, {}, 4);
  CHECK(one.cpus.empty());
  CHECK(one.workers == 1);
  CHECK_FALSE(one.idle_worker);
  // Not pinned: the scheduler places a worker per CPU but one.
  CHECK(packer_placement(-1, {}, 1).workers == 1);
  CHECK(packer_placement(-1, {}, 3).workers == 2);
  CHECK(packer_placement(-1, {}, 64).workers == stub::server::kMaxPackers);
  CHECK_FALSE(packer_placement(-1, {}, 64).idle_worker);
}

}  // namespace test_cpu_choice
