#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "stub/tracing/background_packer.h"
#include "stub/tracing/heap_prefault.h"

namespace test_heap_prefault {  // this file's own names, apart in a unity build

namespace {

constexpr uint64_t kPage = 4096;

// How many of the pages of [begin, end) are resident.
std::size_t resident_pages(uint64_t begin, uint64_t end) {
  std::vector<unsigned char> in((end - begin) / kPage);
  REQUIRE(mincore(reinterpret_cast<void*>(begin), end - begin, in.data()) == 0);
  std::size_t n = 0;
  for (unsigned char page : in) n += page & 1;
  return n;
}

}  // namespace

TEST_CASE("heap prefaulter: the heap's new end is faulted in by its thread, bytes unchanged") {
  // The break moved by hand: 8 MiB past it, untouched (malloc takes the
  // moved break as another's and grows around it).
  const uint64_t before = (reinterpret_cast<uint64_t>(sbrk(0)) + kPage - 1) & ~(kPage - 1);
  constexpr uint64_t kGrowth = uint64_t{8} << 20;
  const uint64_t old_break = reinterpret_cast<uint64_t>(sbrk(0));
  REQUIRE(sbrk(static_cast<intptr_t>(before - old_break + kGrowth)) != reinterpret_cast<void*>(-1));
  const uint64_t end = before + kGrowth;
  CHECK(resident_pages(before, end) < kGrowth / kPage / 2);
  // One page written before: populating keeps what it holds.
  *reinterpret_cast<volatile uint64_t*>(before + 5 * kPage) = 0x1234;
  {
    stub::tracing::HeapPrefaulter prefaulter;
    // On the CPU this thread runs on (any the test may use would do).
    prefaulter.ahead({sched_getcpu()});
    prefaulter.wait_idle();
    CHECK(prefaulter.populated_end() >= end);
    CHECK(resident_pages(before, end) == kGrowth / kPage);
    CHECK(*reinterpret_cast<volatile uint64_t*>(before + 5 * kPage) == 0x1234);
    // Shrunk, then grown again: populated once more up to the new end.
    REQUIRE(sbrk(-static_cast<intptr_t>(kGrowth)) != reinterpret_cast<void*>(-1));
    prefaulter.ahead({});
    prefaulter.wait_idle();
    CHECK(prefaulter.populated_end() <= before);
    REQUIRE(sbrk(static_cast<intptr_t>(kGrowth)) != reinterpret_cast<void*>(-1));
    CHECK(resident_pages(before, end) < kGrowth / kPage / 2);
    prefaulter.ahead({});
    prefaulter.wait_idle();
    CHECK(resident_pages(before, end) == kGrowth / kPage);
  }  // its thread stops and is joined
  REQUIRE(sbrk(-static_cast<intptr_t>(end - old_break)) != reinterpret_cast<void*>(-1));
}

namespace {

// Keeps `cpu` to itself at real-time priority for `spin`, so that nothing
// at normal or idle priority runs there meanwhile (0.3 s: below the
// kernel's real-time throttling, 0.95 s a second). False where it may not
// (no CAP_SYS_NICE, one CPU).
class CpuHog {
 public:
  CpuHog(int cpu, std::chrono::milliseconds spin) {
    thread_ = std::thread([this, cpu, spin] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_param fifo{};
      fifo.sched_priority = 1;
      const bool hogging = sched_setaffinity(0, sizeof set, &set) == 0 &&
                           pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
      {
        std::lock_guard lock(mutex_);
        started_ = true;
        hogging_ = hogging;
      }
      started_cv_.notify_all();
      if (!hogging) return;
      const auto until = std::chrono::steady_clock::now() + spin;
      while (std::chrono::steady_clock::now() < until) {
      }
      done_ = true;
    });
    std::unique_lock lock(mutex_);
    started_cv_.wait(lock, [&] { return started_; });
  }
  ~CpuHog() { thread_.join(); }
  bool hogging() const { return hogging_; }
  bool done() const { return done_.load(); }

 private:
  std::mutex mutex_;
  std::condition_variable started_cv_;
  bool started_ = false;
  bool hogging_ = false;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// A CPU other than the calling thread's, with the calling thread kept off
// it; -1 with one CPU.
int other_cpu() {
  const int here = sched_getcpu();
  const int other = here == 0 ? 1 : 0;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return -1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(here, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return -1;
  return other;
}

void let_run_anywhere() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu = 0; cpu < sysconf(_SC_NPROCESSORS_ONLN) && cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof set, &set);
}

}  // namespace

// The starter places the thread (CPUs, SCHED_IDLE) and never waits for it:
// at idle priority, on a CPU something else keeps busy, it may not run for
// long, and the tracer (and so the program) waited there (Lua's start,
// under another process's load: 1.4-2.7 s where it takes 0.25 s).
TEST_CASE("heap prefaulter and idle packing worker: started without waiting for a busy CPU") {
  const int cpu = other_cpu();
  if (cpu < 0) {
    WARN("one CPU: nothing to show");
    return;
  }
  {
    CpuHog hog(cpu, std::chrono::milliseconds(300));
    if (!hog.hogging()) {
      WARN("no real-time priority here (CAP_SYS_NICE): nothing to show");
    } else {
      stub::tracing::HeapPrefaulter prefaulter;
      prefaulter.ahead({cpu});
      CHECK_FALSE(hog.done());
      stub::tracing::PackerPlacement placement;
      placement.idle_worker = true;
      placement.idle_cpus = {cpu};
      stub::tracing::BackgroundPacker packer(placement);
      CHECK_FALSE(hog.done());
      CHECK(packer.workers() == 2);
    }
  }
  let_run_anywhere();
}

}  // namespace test_heap_prefault
