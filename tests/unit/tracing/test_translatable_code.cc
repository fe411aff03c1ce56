// Which mappings the translating tracer copies code from.
#include <catch2/catch.hpp>

#include "stub/tracing/translatable_code.h"

namespace test_translatable_code {  // this file's own names, apart in a unity build

using stub::tracing::TranslatableCode;

TEST_CASE("only non-writable code of named files is translatable", "[translatable_code]") {
  const char* maps =
      "555555554000-555555555000 r--p 00000000 08:01 1234 /usr/bin/prog\n"
      "555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n"
      "555555557000-555555558000 rw-p 00003000 08:01 1234 /usr/bin/prog\n"
      "7ffff7a00000-7ffff7a10000 rwxp 00000000 00:00 0 \n"
      "7ffff7b00000-7ffff7b10000 r-xp 00000000 00:00 0 \n"
      "7ffff7c00000-7ffff7c10000 r-xs 00000000 00:01 77 /memfd:jit (deleted)\n"
      "7ffff7d00000-7ffff7d10000 r-xp 00000000 08:01 99 /tmp/old.so (deleted)\n"
      "7ffff7d10000-7ffff7d20000 r-xs 00000000 08:01 98 /tmp/shared.so\n"
      "7ffff7dc0000-7ffff7f50000 r-xp 00028000 08:01 4321 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0 [vdso]\n"
      "7ffff7fc5000-7ffff7fef000 r-xp 00001000 08:01 555 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
  const TranslatableCode code = TranslatableCode::parse(maps);
  REQUIRE(code.regions().size() == 3);
  CHECK(code.region_of(0x555555555000) != nullptr);
  CHECK(code.region_of(0x555555555fff) != nullptr);
  CHECK(code.region_of(0x555555556000) == nullptr);
  CHECK(code.region_of(0x555555554fff) == nullptr);  // read-only data
  CHECK(code.region_of(0x7ffff7a00010) == nullptr);  // anonymous, writable
  CHECK(code.region_of(0x7ffff7b00010) == nullptr);  // anonymous
  CHECK(code.region_of(0x7ffff7c00010) == nullptr);  // memfd
  CHECK(code.region_of(0x7ffff7d00010) == nullptr);  // deleted
  // A shared file mapping: another process may write the file, no system
  // call of the program's in between.
  CHECK(code.region_of(0x7ffff7d10010) == nullptr);
  CHECK(code.region_of(0x7ffff7dc1234) != nullptr);  // libc
  // vDSO: no branch of a drained log leaves it, so SoftwareTracer::
  // store_lent_branches looks for no return from it to checkpoint after.
  CHECK(code.region_of(0x7ffff7fc1000) == nullptr);
  CHECK(code.region_of(0x7ffff7fc6000) != nullptr);  // ld.so
  CHECK(code.region_of(0xffffffffff600000) == nullptr);
  CHECK(code.region_of(0x7ffff7dc1234)->end == 0x7ffff7f50000);
}

TEST_CASE("equal maps give equal sources; a change in translatable code shows", "[translatable_code]") {
  const std::string base = "555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n";
  const std::string heap = "555555560000-555555581000 rw-p 00000000 00:00 0 [heap]\n";
  CHECK(TranslatableCode::parse(base).source() == TranslatableCode::parse(base + heap).source());
  const std::string remapped = "555555555000-555555556000 r-xp 00001000 08:01 1235 /usr/bin/other\n";
  CHECK(TranslatableCode::parse(base).source() != TranslatableCode::parse(remapped).source());
  const std::string made_writable = "555555555000-555555556000 rwxp 00001000 08:01 1234 /usr/bin/prog\n";
  CHECK(TranslatableCode::parse(made_writable).regions().empty());
  CHECK(TranslatableCode::parse("garbage\n\n").regions().empty());
}

TEST_CASE("code mapped beside the old keeps it; a region gone or changed does not", "[translatable_code]") {
  const std::string prog = "555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n";
  const std::string libc = "7ffff7dc0000-7ffff7f50000 r-xp 00028000 08:01 4321 /usr/lib/libc.so.6\n";
  const std::string heap = "555555560000-555555581000 rw-p 00000000 00:00 0 [heap]\n";
  const TranslatableCode before = TranslatableCode::parse(prog);
  CHECK(TranslatableCode::parse(prog + heap + libc).keeps(before));  // a library loaded
  CHECK(TranslatableCode::parse(prog).keeps(before));
  CHECK_FALSE(TranslatableCode::parse(libc).keeps(before));  // unmapped
  // The same range from another file, another offset, or made writable.
  CHECK_FALSE(TranslatableCode::parse("555555555000-555555556000 r-xp 00001000 08:01 1235 /usr/bin/other\n")
                  .keeps(before));
  CHECK_FALSE(TranslatableCode::parse("555555555000-555555556000 r-xp 00002000 08:01 1234 /usr/bin/prog\n")
                  .keeps(before));
  CHECK_FALSE(TranslatableCode::parse("555555555000-555555556000 rwxp 00001000 08:01 1234 /usr/bin/prog\n")
                  .keeps(before));
  // Split by an mprotect of part of it.
  CHECK_FALSE(TranslatableCode::parse("555555555000-555555555800 r-xp 00001000 08:01 1234 /usr/bin/prog\n")
                  .keeps(before));
  CHECK(TranslatableCode::parse(libc).keeps(TranslatableCode::parse("")));
}

TEST_CASE("a file also mapped shared and writable is not translatable", "[translatable_code]") {
  const std::string code_line = "7ffff7a00000-7ffff7a01000 r-xp 00000000 08:01 4242 /tmp/jit-code\n";
  const std::string other_code = "7ffff7dc0000-7ffff7f50000 r-xp 00028000 08:01 4321 /usr/lib/libc.so.6\n";
  REQUIRE(TranslatableCode::parse(code_line + other_code).regions().size() == 2);
  // The writable twin may come before or after the executable mapping.
  const std::string twin = "7ffff7b00000-7ffff7b01000 rw-s 00000000 08:01 4242 /tmp/jit-code\n";
  for (const std::string& maps : {twin + code_line + other_code, code_line + other_code + twin}) {
    const TranslatableCode code = TranslatableCode::parse(maps);
    REQUIRE(code.regions().size() == 1);
    CHECK(code.region_of(0x7ffff7a00000) == nullptr);
    CHECK(code.region_of(0x7ffff7dc1000) != nullptr);
    // The twin's arrival changes the source: translations made before it go.
    CHECK(code.source() != TranslatableCode::parse(code_line + other_code).source());
  }
  // A private writable mapping stores into a copy of its own: no twin.
  const std::string private_copy = "7ffff7b00000-7ffff7b01000 rw-p 00000000 08:01 4242 /tmp/jit-code\n";
  CHECK(TranslatableCode::parse(private_copy + code_line).regions().size() == 1);
  // Anonymous shared memory (inode 0) is no file's twin.
  const std::string anonymous = "7ffff7b00000-7ffff7b01000 rw-s 00000000 00:01 0 \n";
  CHECK(TranslatableCode::parse(anonymous + code_line).regions().size() == 1);
}

TEST_CASE("regions know their files and the ranges they cover", "[translatable_code]") {
  const TranslatableCode code =
      TranslatableCode::parse("555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n");
  CHECK(code.maps_file("/usr/bin/prog"));
  CHECK_FALSE(code.maps_file("/usr/bin/other"));
  CHECK(code.overlaps(0x555555555fff, 0x555555556000));
  CHECK(code.overlaps(0x555555554000, 0x555555557000));
  CHECK_FALSE(code.overlaps(0x555555556000, 0x555555557000));
  CHECK_FALSE(code.overlaps(0x555555554000, 0x555555555000));
}

TEST_CASE("code a plain store changes: writable, shared, or of a file stored to shared", "[translatable_code]") {
  const char* maps =
      "555555554000-555555555000 r--p 00000000 08:01 1234 /usr/bin/prog\n"
      "555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n"
      "555555556000-555555557000 rwxp 00002000 08:01 1234 /usr/bin/prog\n"  // its .text made writable
      "555555557000-555555558000 rw-p 00003000 08:01 1234 /usr/bin/prog\n"
      "7ffff7a00000-7ffff7a10000 rwxp 00000000 00:00 0 \n"
      "7ffff7a10000-7ffff7a20000 rwxp 00000000 00:00 0 \n"
      "7ffff7b00000-7ffff7b10000 r-xp 00000000 00:00 0 \n"  // anonymous, stored to only after an mprotect
      "7ffff7c00000-7ffff7c10000 r-xs 00000000 00:01 77 /memfd:jit (deleted)\n"
      "7ffff7c10000-7ffff7c20000 rw-s 00000000 00:01 77 /memfd:jit (deleted)\n"
      "7ffff7d00000-7ffff7d10000 r-xp 00000000 08:01 88 /tmp/code\n"  // private, but...
      "7ffff7d10000-7ffff7d20000 rw-s 00000000 08:01 88 /tmp/code\n"  // ... written shared here
      "7ffff7dc0000-7ffff7f50000 r-xp 00028000 08:01 4321 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n";
  const stub::tracing::AddressRanges ranges = stub::tracing::writable_code(maps);
  const stub::tracing::AddressRanges expected{{0x555555556000, 0x555555557000},
                                              {0x7ffff7a00000, 0x7ffff7a20000},  // adjacent: one range
                                              {0x7ffff7c00000, 0x7ffff7c10000},
                                              {0x7ffff7d00000, 0x7ffff7d10000}};
  CHECK(ranges == expected);
  using stub::tracing::meets;
  CHECK(meets(ranges, 0x555555556ff0, 0x555555557010));
  CHECK(meets(ranges, 0x555555555ff0, 0x555555556001));
  CHECK_FALSE(meets(ranges, 0x555555555000, 0x555555556000));  // ends where the range begins
  CHECK_FALSE(meets(ranges, 0x555555557000, 0x555555557010));
  CHECK(meets(ranges, 0x7ffff7a1fff0, 0x7ffff7a1fff1));
  CHECK_FALSE(meets(ranges, 0x7ffff7b00000, 0x7ffff7b10000));
  CHECK_FALSE(meets(ranges, 0x7ffff7dc1234, 0x7ffff7dc1240));
  CHECK_FALSE(meets(ranges, 0x0, 0x1000));
  CHECK_FALSE(meets(ranges, 0x7ffff7f50000, UINT64_MAX));
  CHECK(meets(ranges, 0x0, UINT64_MAX));
  CHECK(stub::tracing::writable_code("").empty());
}

TEST_CASE("code that may change at all: all but unwritten private file code and the vDSO", "[translatable_code]") {
  const char* maps =
      "555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n"
      "555555556000-555555557000 rwxp 00002000 08:01 1234 /usr/bin/prog\n"
      "7ffff7a00000-7ffff7a10000 rwxp 00000000 00:00 0 \n"
      "7ffff7b00000-7ffff7b10000 r-xp 00000000 00:00 0 \n"  // anonymous: mprotect, store, mprotect
      "7ffff7c00000-7ffff7c10000 r-xs 00000000 00:01 77 /memfd:jit (deleted)\n"
      "7ffff7d00000-7ffff7d10000 r-xp 00000000 08:01 99 /tmp/old.so (deleted)\n"
      "7ffff7d10000-7ffff7d20000 r-xs 00000000 08:01 98 /tmp/shared.so\n"  // another process may write it
      "7ffff7dc0000-7ffff7f50000 r-xp 00028000 08:01 4321 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0 [vdso]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
  const stub::tracing::AddressRanges expected{{0x555555556000, 0x555555557000},
                                              {0x7ffff7a00000, 0x7ffff7a10000},
                                              {0x7ffff7b00000, 0x7ffff7b10000},
                                              {0x7ffff7c00000, 0x7ffff7c10000},
                                              {0x7ffff7d00000, 0x7ffff7d20000}};
  CHECK(stub::tracing::changeable_code(maps) == expected);
  CHECK(stub::tracing::first_met(expected, 0x7ffff7b0fff0, 0x7ffff7b20000) == 0x7ffff7b0fff0);
  CHECK(stub::tracing::first_met(expected, 0x7ffff7b10000, 0x7ffff7c00010) == 0x7ffff7c00000);
  CHECK(stub::tracing::first_met(expected, 0x7ffff7b10000, 0x7ffff7c00000) == 0x7ffff7c00000);  // none: end
}

}  // namespace test_translatable_code
