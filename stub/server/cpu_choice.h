#pragma once
// Which CPU btstub binds itself and its program to (cpu_affinity.h). The one
// it happens to start on may be the busiest: under `ctest -j2` on two CPUs,
// btstubs were seen pinned beside another btstub recording at 100% while the
// other CPU had room, and a btstub started by gdb over stdio then answered
// gdb's first packet after its 2-second timeout. So the choice is the CPU
// that was idle longest over a short look at /proc/stat. No OS calls here:
// the sampling is in cpu_affinity.cc.
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "stub/tracing/background_packer.h"

namespace stub::server {

// Idle time (idle + iowait, in USER_HZ ticks) per CPU, from /proc/stat's
// "cpuN ..." lines; other lines are skipped, malformed ones too.
std::map<int, unsigned long long> idle_ticks_by_cpu(std::string_view proc_stat);

// Among `allowed`, the CPU whose idle time grew most between the two
// samples; `current` wins ties (staying costs no migration), and is the
// answer when a sample lacks a CPU. nullopt when `allowed` is empty.
std::optional<int> quietest_cpu(const std::map<int, unsigned long long>& before,
                                const std::map<int, unsigned long long>& after, const std::vector<int>& allowed,
                                int current);

// At most this many packing workers at normal priority.
inline constexpr std::size_t kMaxPackers = 4;

// Where the software tracer packs its traces (BackgroundPacker), with
// btstub and its program pinned to `pinned` (-1: not pinned; `online`
// CPUs then) and `spare` the other CPUs it may use: a worker on each spare
// CPU, where it takes no turns with the tracer and the program, and one at
// idle priority on the pinned CPU for the time those two leave it (a
// recording waits for the packing when the spare CPUs cannot keep up: two
// CPUs, one spare, on the machines btstub is measured on).
tracing::PackerPlacement packer_placement(int pinned, const std::vector<int>& spare, unsigned online);

}  // namespace stub::server
