#pragma once
// /proc/PID/maps, parsed: what the replay engine (read-only code and data)
// and breakpoint insertion (executable or not) ask of a program's mappings.
#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace stub::process {

struct MemoryMapping {
  uint64_t begin = 0;  // [begin, end)
  uint64_t end = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;  // MAP_SHARED: other processes may see what is written here
  bool stack = false;   // [stack]: grows down into the gap below it
  std::string name;     // the file mapped, or [stack], [heap], [vdso]...; empty for anonymous memory
  uint64_t inode = 0;   // of the file mapped (0: anonymous)
  // Where in the file (or shared memory object) the mapping starts, and
  // the device of the file: with `inode`, two mappings of one object (a
  // memfd mapped twice) are told apart from two objects.
  uint64_t offset = 0;
  uint64_t device = 0;  // major << 32 | minor
};

// One entry per well-formed line, in the file's order (ascending).
std::vector<MemoryMapping> parse_maps(const std::string& text);
// A page-aligned page no mapping holds, within `reach` bytes of
// `address` (its whole page), the nearest (`address`'s own when free); not at the bottom of the
// address space and not in the gap below the stack, which the stack grows
// into. nullopt when there is none.
std::optional<uint64_t> free_page_near(const std::vector<MemoryMapping>& maps, uint64_t address, uint64_t reach,
                                       uint64_t page_size);
// The maps of `pid`; empty when they cannot be read.
std::vector<MemoryMapping> read_maps(pid_t pid);
// Their text; nullopt when it cannot be read (every live process maps
// something).
std::optional<std::string> read_maps_text(pid_t pid);
// Only the shared ones (MAP_SHARED, 's' in the maps), without their names:
// asked of the kernel one at a time (PROCMAP_QUERY, Linux 6.11) where it
// can, which is much cheaper than the text of every mapping (a checkpoint
// needs them, one each 700 branches); else read_maps() filtered. nullopt
// when neither can be read.
std::optional<std::vector<MemoryMapping>> read_shared_maps(pid_t pid);
// The PROCMAP_QUERY half of it; nullopt when the kernel does not answer.
std::optional<std::vector<MemoryMapping>> query_shared_maps(pid_t pid);
// Whether the file `m` maps (a private file mapping of `pid`) changed
// after `since_ns` (CLOCK_REALTIME nanoseconds): its ctime is not 20 ms
// older (a coarse timestamp lags the real time by a tick). Asked of the
// mapped file itself (/proc/PID/map_files: also a deleted file or a
// memfd), else of the file under its name when that is still the mapped
// one; a file that cannot be asked counts as changed. Writes through a
// shared mapping leave a tmpfs file's ctime alone: see shared_files.
bool mapped_file_changed_after(pid_t pid, const MemoryMapping& m, int64_t since_ns);
// The inodes of the files `maps` maps shared and writable: the program can
// change them without a system call, and on tmpfs without a new ctime.
std::set<uint64_t> shared_writable_files(const std::vector<MemoryMapping>& maps);
// A time as nanoseconds since its clock's epoch (what the checks of file
// changes against a copy's making compare).
inline int64_t nanoseconds(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }
// When process `pid` started, in CLOCK_REALTIME nanoseconds (from its
// /proc/PID/stat start time, in clock ticks); nullopt when unreadable.
std::optional<int64_t> process_start_realtime_ns(pid_t pid);
// Whether the page of `pid` holding `addr` still holds its mapping's file
// bytes (/proc/PID/pagemap: not yet faulted in, or a page of the file's
// cache) rather than a private copy (written, by the program or a ptrace
// poke, perhaps before an mprotect made it read-only; or swapped out,
// which only private copies are). nullopt when pagemap cannot be read.
std::optional<bool> page_holds_file_bytes(pid_t pid, uint64_t addr);

}  // namespace stub::process
