#pragma once
// What a checkpoint copy of the program holds of the memory the program
// shares with other processes (ptrace_copy_shared.cc): a snapshot of its
// own, never the program's, with two views of one object still one object.
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "protocol/expected.h"
#include "stub/process/process_copy.h"
#include "stub/process/proc_maps.h"

namespace stub::process::ptrace_detail {

// Makes the system call in the stopped copy; an error unless it returns
// `expect` with no signal met.
btstub::Expected<void> copy_syscall(pid_t copy, long number, std::vector<uint64_t> args, const char* what,
                                    uint64_t expect);

// Mappings shared with other processes (MAP_SHARED: anonymous, files,
// memfd, SysV shm) stay shared through the injected clone: a copy re-run
// in the past would write into the program's present, into files the
// kernel writes back and into other processes, and read the present as the
// past. In the copy each becomes memory of the copy's own, at the same
// place with the same protection, holding what the program held at this
// stop (within a budget: the rest is unmapped): private and anonymous,
// except where the program maps one stretch of an object at more than one
// place (a JIT storing through a writable view of a memfd and running an
// executable one): those views become views of one shared anonymous
// object of the copy's, so that a re-run's stores are seen through the
// others as the program saw them. The mappings so made, the views kept
// aliased, and the digest of the program's bytes there.
btstub::Expected<ProcessCopy::SharedSnapshot> privatize_shared_mappings(pid_t program, pid_t copy,
                                                                        const std::vector<MemoryMapping>& maps);

// A copy forked from a copy inherits its private pages copy-on-write, but
// its aliased views (above) stay shared with its parent's: each object is
// made again in `copy`, from its own bytes, and its views mapped from it,
// so that a re-run of one never changes the checkpoint it came from.
btstub::Expected<void> separate_shared_views(pid_t copy, const std::vector<ProcessCopy::SharedViews>& objects);

}  // namespace stub::process::ptrace_detail
