#include "stub/server/cpu_choice.h"

#include <algorithm>
#include <sstream>
#include <string>

namespace stub::server {

std::map<int, unsigned long long> idle_ticks_by_cpu(std::string_view proc_stat) {
  std::map<int, unsigned long long> out;
  std::istringstream lines{std::string(proc_stat)};
  std::string line;
  while (std::getline(lines, line)) {
    // "cpuN user nice system idle iowait irq softirq steal ..." ("cpu " is the sum).
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0;
    if (!(fields >> cpu >> user >> nice >> system >> idle >> iowait) || cpu < 0) continue;
    out[cpu] = idle + iowait;
  }
  return out;
}

std::optional<int> quietest_cpu(const std::map<int, unsigned long long>& before,
                                const std::map<int, unsigned long long>& after, const std::vector<int>& allowed,
                                int current) {
  if (allowed.empty()) return std::nullopt;
  auto idle_growth = [&](int cpu) -> std::optional<unsigned long long> {
    auto b = before.find(cpu);
    auto a = after.find(cpu);
    if (b == before.end() || a == after.end() || a->second < b->second) return std::nullopt;
    return a->second - b->second;
  };
  bool current_allowed = false;
  for (int cpu : allowed) current_allowed |= cpu == current;
  int best = current_allowed ? current : allowed.front();
  std::optional<unsigned long long> best_idle = idle_growth(best);
  if (!best_idle) return best;
  for (int cpu : allowed) {
    auto idle = idle_growth(cpu);
    if (!idle) return current_allowed ? current : allowed.front();
    if (*idle > *best_idle) {
      best = cpu;
      best_idle = idle;
    }
  }
  return best;
}

tracing::PackerPlacement packer_placement(int pinned, const std::vector<int>& spare, unsigned online) {
  tracing::PackerPlacement placement;
  if (pinned < 0) {
    // The scheduler places every thread: a worker per CPU but one.
    placement.workers = std::clamp<std::size_t>(online > 1 ? online - 1 : 1, 1, kMaxPackers);
    return placement;
  }
  if (spare.empty()) return placement;  // one CPU for all: one worker beside the tracer, as before
  placement.cpus = spare;
  placement.workers = std::min(spare.size(), kMaxPackers);
  placement.idle_worker = true;
  placement.idle_cpus = {pinned};
  return placement;
}

}  // namespace stub::server
