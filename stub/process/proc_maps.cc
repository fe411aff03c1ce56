#include "stub/process/proc_maps.h"

#include <algorithm>
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
    int name_at = 0;
    // Fields: range perms offset dev inode [name]; the name may hold spaces.
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %*s %*s %*s %n", &begin, &end, perms, &name_at) != 3 ||
        begin >= end) {
      continue;
    }
    std::string name = name_at > 0 ? line.substr(static_cast<std::size_t>(name_at)) : std::string();
    out.push_back({begin, end, perms[0] == 'r', perms[1] == 'w', perms[2] == 'x', perms[3] == 's',
                   line.find("[stack]") != std::string::npos, std::move(name)});
  }
  return out;
}

std::optional<uint64_t> free_page_near(const std::vector<MemoryMapping>& maps, uint64_t address, uint64_t reach,
                                       uint64_t page_size) {
  // vm.mmap_min_addr's usual value, and the top of user space.
  constexpr uint64_t kLowest = 0x10000;
  constexpr uint64_t kHighest = 0x7ffffffff000;
  const uint64_t low = address > reach + kLowest ? address - reach : kLowest;
  const uint64_t high = address < kHighest - reach ? address + reach : kHighest;
  std::optional<uint64_t> best;
  auto distance = [&](uint64_t page) { return page > address ? page - address : address - page; };
  auto consider = [&](uint64_t page) {
    if (page < low || page + page_size > high) return;
    if (!best || distance(page) < distance(*best)) best = page;
  };
  uint64_t gap_begin = kLowest;
  for (std::size_t i = 0; i <= maps.size(); ++i) {
    const bool last = i == maps.size();
    const uint64_t gap_end = last ? kHighest : maps[i].begin;
    const uint64_t first = (gap_begin + page_size - 1) / page_size * page_size;
    const uint64_t final_page = gap_end / page_size * page_size;  // one past
    if (first + page_size <= final_page && (last || !maps[i].stack)) {
      consider(first);
      consider(final_page - page_size);
      // And the gap's page nearest `address` (address itself, when the gap
      // holds it).
      const uint64_t aligned = address / page_size * page_size;
      consider(std::clamp(aligned, first, final_page - page_size));
    }
    if (!last) gap_begin = std::max(gap_begin, maps[i].end);
  }
  return best;
}

std::vector<MemoryMapping> read_maps(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::stringstream text;
  text << in.rdbuf();
  return parse_maps(text.str());
}

}  // namespace stub::process
