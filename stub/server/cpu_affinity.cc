#include "stub/server/cpu_affinity.h"

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "stub/server/cpu_choice.h"

namespace stub::server {

namespace {

// How long btstub looks at the CPUs' idle time before choosing: /proc/stat
// counts in 10 ms ticks, so a CPU busy throughout shows 0 and an idle one 2.
constexpr auto kSampleWindow = std::chrono::milliseconds(20);

std::map<int, unsigned long long> sample_idle() {
  std::ifstream in("/proc/stat");
  std::stringstream text;
  text << in.rdbuf();
  return idle_ticks_by_cpu(text.str());
}

}  // namespace

btstub::Expected<PinnedCpu> pin_to_quiet_cpu() {
  const int current = sched_getcpu();
  if (current < 0) {
    return btstub::make_error(btstub::ErrorCode::Internal, std::string("sched_getcpu: ") + std::strerror(errno));
  }
  std::vector<int> allowed;
  cpu_set_t allowed_set;
  if (sched_getaffinity(0, sizeof allowed_set, &allowed_set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed_set)) allowed.push_back(cpu);
    }
  }
  PinnedCpu pinned;
  pinned.cpu = current;
  if (allowed.size() > 1) {
    const auto before = sample_idle();
    std::this_thread::sleep_for(kSampleWindow);
    pinned.cpu = quietest_cpu(before, sample_idle(), allowed, current).value_or(current);
  }
  for (int cpu : allowed) {
    if (cpu != pinned.cpu) pinned.others.push_back(cpu);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(pinned.cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return btstub::make_error(btstub::ErrorCode::Internal,
                              std::string("sched_setaffinity: ") + std::strerror(errno));
  }
  return pinned;
}

}  // namespace stub::server
