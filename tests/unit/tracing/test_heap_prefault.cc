#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "stub/tracing/heap_prefault.h"

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
