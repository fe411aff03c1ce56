// stub/process/repeated_call.h: which system calls a copy makes again
// itself, and with which arguments.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include <cerrno>

#include "stub/process/repeated_call.h"

namespace test_repeated_call {  // this file's own names, apart in a unity build

using stub::process::repeatable_call;
using stub::process::repeated_args;

namespace {
constexpr uint64_t kPc = 0x7000;
constexpr uint64_t kNone = ~uint64_t{0};
constexpr std::optional<uint64_t> kUnknown;
}  // namespace

TEST_CASE("calls that only add to private memory are made again; the rest are barriers", "[repeated_call]") {
  // brk: where it grows the heap or leaves it, with the end before known.
  CHECK(repeatable_call(kPc, SYS_brk, {0}, 0x5000, 0x5000));
  CHECK(repeatable_call(kPc, SYS_brk, {0x9000}, 0x9000, 0x5000));
  CHECK(repeatable_call(kPc, SYS_brk, {0x9000}, 0x5000, 0x5000));  // refused: the copy must be refused too
  CHECK_FALSE(repeatable_call(kPc, SYS_brk, {0x3000}, 0x3000, 0x5000));  // shrinks: takes bytes away
  CHECK_FALSE(repeatable_call(kPc, SYS_brk, {0x9000}, 0x9000, kUnknown));
  CHECK(repeatable_call(kPc, SYS_brk, {0}, 0x5000, 0x5000)->result == 0x5000);
  const uint64_t anon = MAP_PRIVATE | MAP_ANONYMOUS;
  CHECK(repeatable_call(kPc, SYS_mmap, {0, 0x2000, PROT_READ | PROT_WRITE, anon, kNone, 0}, 0x7f0000, kUnknown));
  CHECK(repeatable_call(kPc, SYS_mmap, {0x7f0000, 0x2000, PROT_READ, anon | MAP_FIXED_NOREPLACE, kNone, 0}, 0x7f0000,
                        kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_mmap, {0x7f0000, 0x2000, PROT_READ, anon | MAP_FIXED, kNone, 0}, 0x7f0000,
                              kUnknown));  // replaces what was there
  CHECK_FALSE(repeatable_call(kPc, SYS_mmap, {0, 0x2000, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, kNone, 0}, 0x7f0000,
                              kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_mmap, {0, 0x2000, PROT_READ, MAP_PRIVATE, 3, 0}, 0x7f0000, kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_mmap, {0, 0x2000, PROT_READ, anon, kNone, 0}, -ENOMEM, kUnknown));
  CHECK(repeatable_call(kPc, SYS_mprotect, {0x7f0000, 0x1000, PROT_READ}, 0, kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_mprotect, {0x7f0001, 0x1000, PROT_READ}, -EINVAL, kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_munmap, {0x7f0000, 0x1000}, 0, kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_mremap, {0x7f0000, 0x2000, 0x1000, 0}, 0x7f0000, kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_read, {0, 0x1000, 16}, 16, kUnknown));
  CHECK_FALSE(repeatable_call(kPc, SYS_madvise, {0x7f0000, 0x1000, MADV_DONTNEED}, 0, kUnknown));
}

TEST_CASE("a sleep that ended and sched_yield are given their result, not made", "[repeated_call]") {
  using stub::process::made_again;
  const uint64_t req = 0x7ffd0000, rem = 0x7ffd0010;
  auto slept = repeatable_call(kPc, SYS_nanosleep, {req, rem}, 0, kUnknown);
  REQUIRE(slept);
  CHECK_FALSE(made_again(*slept));
  CHECK_FALSE(repeatable_call(kPc, SYS_nanosleep, {req, rem}, -EINTR, kUnknown));  // wrote the time left
  auto absolute = repeatable_call(kPc, SYS_clock_nanosleep, {CLOCK_MONOTONIC, TIMER_ABSTIME, req, 0}, 0, kUnknown);
  REQUIRE(absolute);
  CHECK_FALSE(made_again(*absolute));
  CHECK_FALSE(repeatable_call(kPc, SYS_clock_nanosleep, {CLOCK_MONOTONIC, 0, req, rem}, -EINTR, kUnknown));
  auto yielded = repeatable_call(kPc, SYS_sched_yield, {}, 0, kUnknown);
  REQUIRE(yielded);
  CHECK_FALSE(made_again(*yielded));
  CHECK(made_again(*repeatable_call(kPc, SYS_mprotect, {0x7f0000, 0x1000, PROT_READ}, 0, kUnknown)));
  CHECK(made_again(*repeatable_call(kPc, SYS_brk, {0}, 0x5000, 0x5000)));
}

TEST_CASE("an mmap the kernel placed goes where the program's went, and nowhere else", "[repeated_call]") {
  const uint64_t anon = MAP_PRIVATE | MAP_ANONYMOUS;
  auto placed = repeatable_call(kPc, SYS_mmap, {0, 0x2000, PROT_READ, anon, kNone, 0}, 0x7f0000, kUnknown);
  REQUIRE(placed);
  CHECK(repeated_args(*placed) ==
        std::array<uint64_t, 6>{0x7f0000, 0x2000, PROT_READ, anon | MAP_FIXED_NOREPLACE, kNone, 0});
  auto noreplace = repeatable_call(kPc, SYS_mmap, {0x7f0000, 0x2000, PROT_READ, anon | MAP_FIXED_NOREPLACE, kNone, 0},
                                   0x7f0000, kUnknown);
  REQUIRE(noreplace);
  CHECK(repeated_args(*noreplace) == noreplace->args);
  auto brk = repeatable_call(kPc, SYS_brk, {0x9000}, 0x9000, 0x5000);
  REQUIRE(brk);
  CHECK(repeated_args(*brk) == brk->args);
}

}  // namespace test_repeated_call
