#pragma once
// Keeps btstub and the programs it starts on one CPU. In the VMs btstub is
// built for, a ptrace stop that wakes a tracer on another CPU costs ~60 µs,
// on the same CPU ~10-20 µs; every step, breakpoint and traced block pays
// it. rr binds its tracees to one CPU for the same reason.
#include <vector>

#include "protocol/expected.h"

namespace stub::server {

struct PinnedCpu {
  int cpu = -1;
  // The CPUs the thread was allowed before, but `cpu`: where work that
  // should not take turns with the tracer and the program can go without
  // leaving the set btstub was started with (`taskset`). Empty when that
  // set was `cpu` alone.
  std::vector<int> others;
};

// Binds the calling thread, and so every process it forks later, to the
// allowed CPU that was idle longest over a 20 ms look (cpu_choice.h); the
// one it runs on when they are as idle, or when it is the only one allowed.
btstub::Expected<PinnedCpu> pin_to_quiet_cpu();

}  // namespace stub::server
