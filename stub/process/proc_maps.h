#pragma once
// /proc/PID/maps, parsed: what the replay engine (read-only code and data)
// and breakpoint insertion (executable or not) ask of a program's mappings.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stub::process {

struct MemoryMapping {
  uint64_t begin = 0;  // [begin, end)
  uint64_t end = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;  // MAP_SHARED: other processes may see what is written here
};

// One entry per well-formed line, in the file's order (ascending).
std::vector<MemoryMapping> parse_maps(const std::string& text);
// The maps of `pid`; empty when they cannot be read.
std::vector<MemoryMapping> read_maps(pid_t pid);

}  // namespace stub::process
