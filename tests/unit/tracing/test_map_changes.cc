// Where the memory map changed during a recording, and which points of
// which thread's history may lie before each change
// (stub/tracing/map_changes.h), and the ranges a system call names
// (stub/tracing/code_writes.h: mapping_changes_of).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "stub/tracing/code_writes.h"
#include "stub/tracing/map_changes.h"

namespace test_map_changes {  // this file's own names, apart in a unity build

using stub::tracing::code_write_in;
using stub::tracing::CodeWrite;
using stub::tracing::MapChanges;
using stub::tracing::mapping_changes_of;
using stub::tracing::SystemCall;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

namespace {

SystemCall call(int64_t number, std::array<uint64_t, 6> args = {}) { return {number, args}; }

constexpr uint64_t kAll = UINT64_MAX;

}  // namespace

TEST_CASE("the calling thread's points up to the call lie before it", "[map_changes]") {
  MapChanges changes;
  const std::vector<pid_t> none;
  changes.note(0x1000, 0x3000, 10, 50, none);
  CHECK(changes.changed_after(10, 49, 0, kAll) == Ranges{{0x1000, 0x3000}});
  // At the call's own sequence: its block holds the call, before or after it unknown.
  CHECK(changes.changed_after(10, 50, 0, kAll) == Ranges{{0x1000, 0x3000}});
  CHECK(changes.changed_after(10, 51, 0, kAll).empty());
  // Only the part asked about.
  CHECK(changes.changed_after(10, 0, 0x2000, 0x5000) == Ranges{{0x2000, 0x3000}});
  CHECK(changes.changed_after(10, 0, 0x3000, 0x5000).empty());
  CHECK(changes.changed_after(10, 0, 0, 0x1000).empty());
}

TEST_CASE("other threads with a history then: all their points, none of a later thread's", "[map_changes]") {
  MapChanges changes;
  const std::vector<pid_t> others{10, 11};
  changes.note(0x1000, 0x2000, 10, 5, others);
  CHECK(changes.changed_after(11, 1'000'000, 0, kAll) == Ranges{{0x1000, 0x2000}});
  CHECK(changes.changed_after(12, 0, 0, kAll).empty());  // began after the change
  CHECK(changes.changed_after(10, 6, 0, kAll).empty());  // the caller listed among the others too
}

TEST_CASE("the same range again keeps each thread's later bound", "[map_changes]") {
  MapChanges changes;
  const std::vector<pid_t> none;
  changes.note(0x1000, 0x2000, 10, 5, none);
  changes.note(0x1000, 0x2000, 10, 90, none);
  changes.note(0x1000, 0x2000, 10, 20, none);
  CHECK(changes.size() == 1);
  CHECK(changes.changed_after(10, 90, 0, kAll) == Ranges{{0x1000, 0x2000}});
  CHECK(changes.changed_after(10, 91, 0, kAll).empty());
}

TEST_CASE("overlapping changes are joined in an answer", "[map_changes]") {
  MapChanges changes;
  const std::vector<pid_t> none;
  changes.note(0x1000, 0x3000, 10, 5, none);
  changes.note(0x2000, 0x5000, 10, 5, none);
  changes.note(0x8000, 0x9000, 10, 5, none);
  changes.note(0x0, kAll, 10, 1, none);  // a store through the memory file: everything
  CHECK(changes.changed_after(10, 3, 0x1000, 0xa000) == Ranges{{0x1000, 0x5000}, {0x8000, 0x9000}});
  CHECK(changes.changed_after(10, 0, 0x1000, 0xa000) == Ranges{{0x1000, 0xa000}});
}

TEST_CASE("past the limit neighbours merge, never forgetting a change", "[map_changes]") {
  MapChanges changes;
  const std::vector<pid_t> none;
  const uint64_t n = MapChanges::kMaxChanges + 500;
  for (uint64_t i = 0; i < n; ++i) changes.note(0x10000 * (i + 1), 0x10000 * (i + 1) + 0x1000, 10, i, none);
  CHECK(changes.size() <= MapChanges::kMaxChanges);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t page = 0x10000 * (i + 1);
    // Before its change: unknown, as before any merge.
    CHECK(changes.changed_after(10, i, page, page + 0x1000) == Ranges{{page, page + 0x1000}});
  }
  // After the last change nothing is unknown any more.
  CHECK(changes.changed_after(10, n, 0, kAll).empty());
}

TEST_CASE("a system call's changed ranges, page-aligned", "[map_changes]") {
  const CodeWrite no_write;
  // mmap without MAP_FIXED: where the kernel put it (the result).
  CHECK(mapping_changes_of(call(9, {0, 100, 1, 2}), 0x7000, no_write) == Ranges{{0x7000, 0x8000}});
  // Failed (-ENOMEM): nothing mapped.
  CHECK(mapping_changes_of(call(9, {0, 100, 1, 2}), static_cast<uint64_t>(-12), no_write).empty());
  // MAP_FIXED: the asked range, whatever the result.
  CHECK(mapping_changes_of(call(9, {0x5000, 0x2000, 1, 0x12}), 0x5000, no_write) == Ranges{{0x5000, 0x7000}});
  // Anonymous memory the program cannot run: never read from the present.
  CHECK(mapping_changes_of(call(9, {0, 100, 3, 0x22}), 0x7000, no_write).empty());
  CHECK(mapping_changes_of(call(9, {0x5000, 100, 3, 0x32}), 0x5000, no_write).empty());
  CHECK(mapping_changes_of(call(9, {0, 100, 5, 0x22}), 0x7000, no_write) == Ranges{{0x7000, 0x8000}});  // PROT_EXEC
  CHECK(mapping_changes_of(call(10, {0x5000, 1, 1}), 0, no_write) == Ranges{{0x5000, 0x6000}});     // mprotect
  // munmap: what the present holds there later was mapped by a later call.
  CHECK(mapping_changes_of(call(11, {0x5000, 0x1000}), 0, no_write).empty());
  CHECK(mapping_changes_of(call(28, {0x5000, 0x1000, 4}), 0, no_write) == Ranges{{0x5000, 0x6000}});  // madvise
  // mremap: the old range and the new one.
  CHECK(mapping_changes_of(call(25, {0x5000, 0x1000, 0x3000, 1}), 0x9000, no_write) ==
        Ranges{{0x5000, 0x6000}, {0x9000, 0xc000}});
  CHECK(mapping_changes_of(call(311, {1}), 0, no_write) == Ranges{{0, kAll}});  // process_vm_writev
  CHECK(mapping_changes_of(call(311, {1}), static_cast<uint64_t>(-3), no_write).empty());  // failed: ESRCH
  CHECK(mapping_changes_of(call(39), 1234, no_write).empty());                   // getpid
  // A length reaching past the top of the address space.
  CHECK(mapping_changes_of(call(10, {0xfffffffffffff000, 0x2000, 1}), 0, no_write) ==
        Ranges{{0xfffffffffffff000, kAll}});
}

TEST_CASE("a write into the program's memory file changes everything; into a file, nothing", "[map_changes]") {
  const int mem = ::open("/proc/self/mem", O_RDWR);
  REQUIRE(mem >= 0);
  const SystemCall pwrite_mem = call(18, {static_cast<uint64_t>(mem), 0, 1, 0x1000});
  CHECK(mapping_changes_of(pwrite_mem, 1, code_write_in(::getpid(), pwrite_mem)) == Ranges{{0, kAll}});
  ::close(mem);
  const int null = ::open("/dev/null", O_WRONLY);
  REQUIRE(null >= 0);
  const SystemCall write_null = call(1, {static_cast<uint64_t>(null), 0, 1});
  CHECK(mapping_changes_of(write_null, 1, code_write_in(::getpid(), write_null)).empty());
  ::close(null);
  // A descriptor that names nothing: the write failed (EBADF), nothing changed.
  const SystemCall write_bad = call(1, {999, 0, 1});
  CHECK(mapping_changes_of(write_bad, static_cast<uint64_t>(-9), code_write_in(::getpid(), write_bad)).empty());
  // One that could not be named but wrote (closed since by another thread): anything.
  CHECK(mapping_changes_of(write_bad, 1, code_write_in(::getpid(), write_bad)) == Ranges{{0, kAll}});
}

TEST_CASE("a write while every thread stood still: each thread's points up to where it stood", "[map_changes]") {
  MapChanges changes;
  const std::vector<std::pair<pid_t, uint64_t>> stopped{{10, 40}, {11, 7}};
  changes.note_stopped(0x1000, 0x1006, stopped);
  CHECK(changes.changed_after(10, 40, 0, kAll) == Ranges{{0x1000, 0x1006}});  // where it stood: before the write
  CHECK(changes.changed_after(10, 41, 0, kAll).empty());
  CHECK(changes.changed_after(11, 7, 0, kAll) == Ranges{{0x1000, 0x1006}});
  CHECK(changes.changed_after(11, 8, 0, kAll).empty());
  CHECK(changes.changed_after(12, 0, 0, kAll).empty());  // no history then
}

}  // namespace test_map_changes
