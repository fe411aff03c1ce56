#pragma once
// The page size of x86-64 Linux, what mmap, mprotect, process_vm_readv's
// faults and the kernel's per-page accounting work in: one constant for
// every file of stub/ that rounds to pages.
#include <cstdint>

namespace stub {

inline constexpr uint64_t kPageSize = 4096;

}  // namespace stub
