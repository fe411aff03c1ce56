#include "stub/server/cpu_affinity.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace stub::server {

btstub::Expected<int> pin_to_current_cpu() {
  int cpu = sched_getcpu();
  if (cpu < 0) {
    return btstub::make_error(btstub::ErrorCode::Internal,
                              std::string("sched_getcpu: ") + std::strerror(errno));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return btstub::make_error(btstub::ErrorCode::Internal,
                              std::string("sched_setaffinity: ") + std::strerror(errno));
  }
  return cpu;
}

}  // namespace stub::server
