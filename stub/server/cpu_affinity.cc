#include "stub/server/cpu_affinity.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace stub::server {

btstub::Expected<PinnedCpu> pin_to_current_cpu() {
  PinnedCpu pinned;
  pinned.cpu = sched_getcpu();
  if (pinned.cpu < 0) {
    return btstub::make_error(btstub::ErrorCode::Internal,
                              std::string("sched_getcpu: ") + std::strerror(errno));
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (cpu != pinned.cpu && CPU_ISSET(cpu, &allowed)) pinned.others.push_back(cpu);
    }
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
