// PtraceProcess::executable: the permissions of the mapping holding an
// address, from /proc/PID/maps (read when asked: breakpoints are inserted
// rarely, and mappings change with every dlopen).
#include <cstdio>
#include <fstream>
#include <string>

#include "stub/ptrace_process.h"

namespace stub {

std::optional<bool> PtraceProcess::executable(uint64_t addr) const {
  std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
  if (!maps) return std::nullopt;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &begin, &end, perms) != 3) continue;
    if (addr >= begin && addr < end) return perms[2] == 'x';
  }
  return false;  // unmapped
}

}  // namespace stub
