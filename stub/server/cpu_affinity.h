#pragma once
// Keeps btstub and the programs it starts on one CPU. In the VMs btstub is
// built for, a ptrace stop that wakes a tracer on another CPU costs ~60 µs,
// on the same CPU ~10-20 µs; every step, breakpoint and traced block pays
// it. rr binds its tracees to one CPU for the same reason.
#include "protocol/expected.h"

namespace stub::server {

// Binds the calling thread, and so every process it forks later, to the
// CPU it is running on now. Returns that CPU.
btstub::Expected<int> pin_to_current_cpu();

}  // namespace stub::server
