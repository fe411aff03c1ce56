// PtraceProcess::executable: the permissions of the mapping holding an
// address, read when asked (breakpoints are inserted rarely, and mappings
// change with every dlopen).
#include "stub/proc_maps.h"
#include "stub/ptrace_process.h"

namespace stub {

std::optional<bool> PtraceProcess::executable(uint64_t addr) const {
  const std::vector<MemoryMapping> maps = read_maps(pid_);
  if (maps.empty()) return std::nullopt;  // unreadable: nothing refused on its account
  for (const MemoryMapping& m : maps) {
    if (addr >= m.begin && addr < m.end) return m.executable;
  }
  return false;  // unmapped
}

}  // namespace stub
