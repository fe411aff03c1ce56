#include "stub/process/proc_maps.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace stub::process {

std::vector<MemoryMapping> parse_maps(const std::string& text) {
  std::vector<MemoryMapping> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    unsigned long long begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &begin, &end, perms) != 3 || begin >= end) continue;
    out.push_back({begin, end, perms[0] == 'r', perms[1] == 'w', perms[2] == 'x', perms[3] == 's'});
  }
  return out;
}

std::vector<MemoryMapping> read_maps(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::stringstream text;
  text << in.rdbuf();
  return parse_maps(text.str());
}

}  // namespace stub::process
