// Which system calls may change translated code without changing the
// maps (stub/tracing/code_writes.h), judged from their numbers and
// arguments as the kernel leaves them at the stop after the call.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "stub/tracing/code_writes.h"

namespace test_code_writes {  // this file's own names, apart in a unity build

using stub::tracing::changes_code;
using stub::tracing::changes_memory_map;
using stub::tracing::code_write_in;
using stub::tracing::code_write_of;
using stub::tracing::writes_process_memory;
using stub::tracing::CodeWrite;
using stub::tracing::SystemCall;
using stub::tracing::TranslatableCode;

namespace {

SystemCall call(int64_t number, std::array<uint64_t, 6> args = {}) { return {number, args}; }

}  // namespace

TEST_CASE("writes name their descriptor, memory calls their range", "[code_writes]") {
  CHECK(code_write_of(call(1, {5, 0x1000, 10})).kind == CodeWrite::Kind::Descriptor);  // write
  CHECK(code_write_of(call(1, {5})).fd == 5);
  CHECK(code_write_of(call(18, {7})).fd == 7);                    // pwrite64
  CHECK(code_write_of(call(20, {8})).fd == 8);                    // writev
  CHECK(code_write_of(call(328, {9})).fd == 9);                   // pwritev2
  CHECK(code_write_of(call(275, {3, 0, 11})).fd == 11);           // splice: fd_out
  CHECK(code_write_of(call(326, {3, 0, 12})).fd == 12);           // copy_file_range: fd_out
  const CodeWrite protect = code_write_of(call(10, {0x400000, 0x2000, 3}));  // mprotect
  CHECK(protect.kind == CodeWrite::Kind::Range);
  CHECK(protect.begin == 0x400000);
  CHECK(protect.end == 0x402000);
  CHECK(code_write_of(call(11, {0x400000, 0x1000})).kind == CodeWrite::Kind::Range);  // munmap
  CHECK(code_write_of(call(28, {0x400000, 0x1000, 4})).kind == CodeWrite::Kind::Range);  // madvise
  // mmap over existing code only with MAP_FIXED.
  CHECK(code_write_of(call(9, {0x400000, 0x1000, 7, 0x12})).kind == CodeWrite::Kind::Range);
  CHECK(code_write_of(call(9, {0, 0x1000, 7, 0x22})).kind == CodeWrite::Kind::None);
  CHECK(code_write_of(call(311, {1234})).kind == CodeWrite::Kind::Anything);  // process_vm_writev
  CHECK(code_write_of(call(0, {0, 0x1000, 10})).kind == CodeWrite::Kind::None);  // read
  CHECK(code_write_of(call(-1)).kind == CodeWrite::Kind::None);                  // no call
  // A length that wraps stays at the top of the address space.
  CHECK(code_write_of(call(10, {0xfffffffffffff000, 0x2000})).end == UINT64_MAX);
}

TEST_CASE("a call changes code when it meets translated code or writes its files", "[code_writes]") {
  const TranslatableCode code =
      TranslatableCode::parse("555555555000-555555556000 r-xp 00001000 08:01 1234 /usr/bin/prog\n");
  const pid_t self = ::getpid();
  const auto changes = [&](const SystemCall& c, const TranslatableCode& in) {
    return changes_code(code_write_in(self, c), in);
  };
  CHECK(changes(call(10, {0x555555555000, 0x1000, 3}), code));
  CHECK_FALSE(changes(call(10, {0x7f0000000000, 0x1000, 3}), code));
  CHECK(changes(call(311, {1}), code));
  CHECK_FALSE(changes(call(39), code));  // getpid
  // Descriptors resolve through /proc/PID/fd, once: this process's memory
  // file changes code, /dev/null does not, a closed descriptor counts as a
  // change.
  const int mem = ::open("/proc/self/mem", O_RDWR);
  const int null = ::open("/dev/null", O_WRONLY);
  REQUIRE(mem >= 0);
  REQUIRE(null >= 0);
  const CodeWrite to_mem = code_write_in(self, call(18, {static_cast<uint64_t>(mem)}));
  REQUIRE(to_mem.file);
  CHECK(writes_process_memory(to_mem));
  CHECK(changes_code(to_mem, code));
  const CodeWrite to_null = code_write_in(self, call(1, {static_cast<uint64_t>(null)}));
  CHECK(to_null.file == std::optional<std::string>("/dev/null"));
  CHECK_FALSE(writes_process_memory(to_null));
  CHECK_FALSE(changes_code(to_null, code));
  ::close(mem);
  const CodeWrite to_closed = code_write_in(self, call(18, {static_cast<uint64_t>(mem)}));
  CHECK_FALSE(to_closed.file);
  CHECK(writes_process_memory(to_closed));
  CHECK(changes_code(to_closed, code));
  // The file a region maps, written through a descriptor.
  const TranslatableCode null_code =
      TranslatableCode::parse("555555555000-555555556000 r-xp 00000000 00:05 4 /dev/null\n");
  CHECK(changes_code(to_null, null_code));
  ::close(null);
  // A failed call (EBADF) wrote nothing.
  CHECK_FALSE(changes_code(code_write_in(self, call(1, {static_cast<uint64_t>(-1)})), code));
}

TEST_CASE("only calls that change the memory map make the maps be read again", "[code_writes]") {
  for (int64_t number : {9, 10, 11, 12, 25, 30, 67, 216, 329}) {  // mmap ... pkey_mprotect
    INFO("system call " << number);
    CHECK(changes_memory_map(call(number)));
  }
  for (int64_t number : {-1, 0, 1, 18, 28, 39, 56, 60, 202, 311}) {  // none, read, write, pwrite64, madvise, ...
    INFO("system call " << number);
    CHECK_FALSE(changes_memory_map(call(number)));
  }
}

TEST_CASE("calls that may make code a store changes make it be looked for again", "[code_writes]") {
  using stub::tracing::may_map_changeable_code;
  constexpr uint64_t kRead = 1, kWrite = 2, kExec = 4, kShared = 1, kPrivate = 2, kSharedValidate = 3,
                     kAnonymous = 0x20;
  // mmap(addr, length, prot, flags, fd, offset)
  CHECK(may_map_changeable_code(call(9, {0, 4096, kRead | kWrite | kExec, kPrivate | kAnonymous})));
  CHECK(may_map_changeable_code(call(9, {0, 4096, kRead | kExec, kPrivate, 3})));
  CHECK(may_map_changeable_code(call(9, {0, 4096, kRead | kWrite, kShared, 3})));  // a file's other view
  CHECK(may_map_changeable_code(call(9, {0, 4096, kRead | kWrite, kSharedValidate, 3})));
  CHECK_FALSE(may_map_changeable_code(call(9, {0, 4096, kRead | kWrite, kPrivate | kAnonymous})));  // malloc's
  CHECK_FALSE(may_map_changeable_code(call(9, {0, 4096, kRead, kShared, 3})));
  // mprotect(addr, length, prot)
  CHECK(may_map_changeable_code(call(10, {0x1000, 4096, kRead | kWrite | kExec})));
  CHECK(may_map_changeable_code(call(10, {0x1000, 4096, kRead | kExec})));  // maybe of a shared mapping
  CHECK_FALSE(may_map_changeable_code(call(10, {0x1000, 4096, kRead | kWrite})));
  CHECK(may_map_changeable_code(call(329, {0x1000, 4096, kRead | kExec, 1})));  // pkey_mprotect
  CHECK(may_map_changeable_code(call(25)));   // mremap
  CHECK(may_map_changeable_code(call(30)));   // shmat
  CHECK(may_map_changeable_code(call(216)));  // remap_file_pages
  CHECK_FALSE(may_map_changeable_code(call(11, {0x1000, 4096})));  // munmap
  CHECK_FALSE(may_map_changeable_code(call(12)));                  // brk
  CHECK_FALSE(may_map_changeable_code(call(1, {5, 0x1000, 10})));
}

}  // namespace test_code_writes
