// stub/process/proc_maps.h: parsing /proc/PID/maps, and finding a free page
// near an address for a copy's counting trampoline.
#include <catch2/catch.hpp>

#include "stub/process/proc_maps.h"

namespace test_proc_maps {  // this file's own names, apart in a unity build

using stub::process::free_page_near;
using stub::process::parse_maps;

namespace {

const char* kMaps =
    "555555554000-555555556000 r--p 00000000 08:01 1 /prog\n"
    "555555556000-555555557000 r-xp 00002000 08:01 1 /prog\n"
    "555555557000-555555559000 rw-p 00003000 08:01 1 /prog\n"
    "555555600000-555555700000 rw-p 00000000 00:00 0 [heap]\n"
    "7ffff7dd0000-7ffff7f00000 r-xp 00000000 08:01 2 /libc.so\n"
    "7ffff7f00000-7ffff7f10000 rw-p 00000000 00:00 0\n"
    "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n";

}  // namespace

TEST_CASE("maps keep permissions and which one is the stack", "[proc_maps]") {
  auto maps = parse_maps(kMaps);
  REQUIRE(maps.size() == 7);
  CHECK(maps[1].executable);
  CHECK_FALSE(maps[1].writable);
  CHECK(maps[6].stack);
  CHECK_FALSE(maps[3].stack);
}

TEST_CASE("maps keep the inode of what is mapped, and names with spaces", "[proc_maps]") {
  auto maps = parse_maps(
      "7ffff7dd0000-7ffff7f00000 r-xp 00000000 08:01 123456789 /libc.so\n"
      "100000000000-100000181000 rw-s 00000000 00:01 1937                       /memfd: (deleted)\n"
      "7ffff7f00000-7ffff7f10000 rw-p 00000000 00:00 0\n");
  REQUIRE(maps.size() == 3);
  CHECK(maps[0].inode == 123456789u);
  CHECK(maps[1].inode == 1937u);
  CHECK(maps[1].shared);
  CHECK(maps[1].name == "/memfd: (deleted)");
  CHECK(maps[2].inode == 0u);
  CHECK(maps[2].name.empty());
}

TEST_CASE("maps keep the offset and device that tell one object mapped twice", "[proc_maps]") {
  auto maps = parse_maps(
      "7f0000000000-7f0000002000 rw-s 00000000 00:01 2051 /memfd:jit (deleted)\n"
      "7f0000010000-7f0000011000 r-xs 00001000 00:01 2051 /memfd:jit (deleted)\n"
      "7ffff7dd0000-7ffff7f00000 r-xp 0001a000 fd:1c 77 /libc.so\n");
  REQUIRE(maps.size() == 3);
  CHECK(maps[0].offset == 0u);
  CHECK(maps[1].offset == 0x1000u);
  CHECK(maps[0].device == maps[1].device);
  CHECK(maps[0].device == 1u);
  CHECK(maps[2].offset == 0x1a000u);
  CHECK(maps[2].device == (0xfdull << 32 | 0x1c));
}

TEST_CASE("a free page is the nearest one in reach, never below the stack", "[proc_maps]") {
  auto maps = parse_maps(kMaps);
  const uint64_t reach = (1ull << 31) - 2 * 4096;
  // Right after the program's data, before the heap.
  CHECK(free_page_near(maps, 0x555555556100, reach, 4096) == 0x555555559000u);
  // libc's nearest gap is below it (the one above it lies under the stack).
  CHECK(free_page_near(maps, 0x7ffff7f0ff00, reach, 4096) == 0x7ffff7dcf000u);
  // Nothing in reach.
  CHECK_FALSE(free_page_near(maps, 0x555555556100, 0x1000, 4096));
  // A full address space around the address.
  auto full = parse_maps("10000-7ffffffff000 r-xp 00000000 08:01 1 /all\n");
  CHECK_FALSE(free_page_near(full, 0x400000, reach, 4096));
}

TEST_CASE("an address in a gap is its own nearest free page", "[proc_maps]") {
  auto maps = parse_maps(kMaps);
  const uint64_t reach = (1ull << 30);
  // Between the heap and libc: far from both ends of the gap (where the
  // program's own mappings grow), the page of the address itself.
  CHECK(free_page_near(maps, 0x7fffb7e11512, reach, 4096) == 0x7fffb7e11000u);
  CHECK(free_page_near(maps, 0x7fffb7e11512, reach, 1 << 22) == 0x7fffb7c00000u);
}

}  // namespace test_proc_maps
