#pragma once
// btstub's own malloc settings, and the environment the program inherits.
//
// A recording keeps every chunk of a long history (Lua at --scale 10: ~190
// MB), each in heap memory touched for the first time, and on the VMs btstub
// runs in a page fault costs several microseconds: the packing worker spent a
// third of its time in glibc's heap growth and the faults under it, and the
// thread that serves the client took over the chunks it fell behind on.
// Transparent huge pages (glibc.malloc.hugetlb=1, with a top_pad that
// grows the heap 32 MiB at a time; every thread allocates from the main
// arena, main.cc) fault 2 MiB at a time: btstub's
// CPU time recording Lua went down by a fifth (docs/performance.md). glibc
// takes these settings only from GLIBC_TUNABLES when a process starts,
// and the system's THP mode is usually `madvise`, so
// btstub starts itself once more with them set, and puts back the environment
// it was given before anything reads it: the programs it launches see
// exactly that environment, in its order.
#include <optional>
#include <string>
#include <vector>

namespace stub::server {

// The environment to start btstub again with: `given` with the settings
// added to GLIBC_TUNABLES (in its place, or last) and a marker last that
// says what GLIBC_TUNABLES was. nullopt when btstub must not start again:
// it already did (the marker is there), or the user chose a hugetlb or a
// top_pad setting, or GLIBC_TUNABLES appears more than once.
std::optional<std::vector<std::string>> restart_environment(const std::vector<std::string>& given);

// The environment btstub was given, from the one it was started with:
// the marker gone and GLIBC_TUNABLES as it was (or gone if it was not
// there), every other entry in its order. `started` itself when it holds
// no marker.
std::vector<std::string> given_environment(const std::vector<std::string>& started);

// btstub's environment as it is now (`environ`, in order): what a program
// it launches inherits, once restore_given_environment() has run.
std::vector<std::string> current_environment();

// Sets `environ` to given_environment(environ); call first in main.
// Whether this is btstub started again (the marker was there).
bool restore_given_environment();

// Replaces the process with btstub started again with restart_environment
// (the same argv); returns when that is not wanted or cannot be done (no
// /proc/self/exe, exec failed): btstub then runs with glibc's defaults.
// Not to be called in btstub started again (restore_given_environment).
void restart_with_malloc_settings(char** argv);

}  // namespace stub::server
