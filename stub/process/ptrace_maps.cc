// PtraceProcess::executable and shadow_stack: the permissions of the mapping holding an
// address, read when asked (breakpoints are inserted rarely, and mappings
// change with every dlopen).
#include <fstream>
#include <string>

#include "stub/process/proc_maps.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {

std::optional<bool> PtraceProcess::executable(uint64_t addr) const {
  const std::vector<MemoryMapping> maps = read_maps(pid_);
  if (maps.empty()) return std::nullopt;  // unreadable: nothing refused on its account
  for (const MemoryMapping& m : maps) {
    if (addr >= m.begin && addr < m.end) return m.executable;
  }
  return false;  // unmapped
}

// Kernels built with user shadow stacks list them in the thread's status
// ("x86_Thread_features: shstk wrss"); others have no such line.
bool PtraceProcess::shadow_stack(pid_t tid) const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("x86_Thread_features:", 0) == 0) return line.find("shstk") != std::string::npos;
  }
  return false;
}

}  // namespace stub::process
