#pragma once
// Which of the program's code the translating tracer may copy into its
// cache: code that can change only through a system call the tracer sees
// (it runs every system call under the ptrace tracer, and re-reads this
// after). That is code in a private mapping of a named file that is not
// writable: not a shared one (another process may write the file), not
// anonymous memory (a JIT writes and runs that), not a writable
// mapping (code written then run), not a memfd or deleted file (often
// mapped a second time, writable), not a file that is also mapped shared
// and writable anywhere in the program (a store there changes the code
// with no system call), not the vDSO (the ptrace tracer checkpoints at its
// returns). Code elsewhere runs under the ptrace tracer.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stub::tracing {

struct CodeRegion {
  uint64_t begin = 0;  // [begin, end)
  uint64_t end = 0;
  std::string path;    // the mapped file, as /proc/PID/maps names it
  bool operator==(const CodeRegion&) const = default;
};

// [begin, end) ranges, ascending, apart.
using AddressRanges = std::vector<std::pair<uint64_t, uint64_t>>;

// The program's executable mappings whose bytes a plain store of the
// program changes, no system call made: writable ones, shared ones (another
// mapping or process may write the object) and those of a file some mapping
// stores to shared. A tracer's int3 there can be overwritten (the branch
// under it then runs unseen, and lifting it writes back a stale byte), and
// code decoded there can go stale at any instruction.
AddressRanges writable_code(const std::string& maps_text);
// The program's executable mappings whose code may change at all, by a
// store or a system call: all but private mappings of named files no
// mapping stores to shared (the code the translating tracer copies, below)
// and the vDSO. A PT chunk's packets over such code would read as a gap
// once it changed; its branches are kept in the explicit format instead.
AddressRanges changeable_code(const std::string& maps_text);
// Whether [begin, end) meets any of `ranges`.
bool meets(const AddressRanges& ranges, uint64_t begin, uint64_t end);
// The lowest address of [begin, end) in `ranges` (`end` when none is).
uint64_t first_met(const AddressRanges& ranges, uint64_t begin, uint64_t end);

class TranslatableCode {
 public:
  // From the text of /proc/PID/maps.
  static TranslatableCode parse(const std::string& maps_text);
  // The program's, read now (empty when its maps cannot be read).
  static TranslatableCode read(pid_t pid);

  // The region holding `address`, or nullptr.
  const CodeRegion* region_of(uint64_t address) const;
  // Whether [begin, end) meets any region.
  bool overlaps(uint64_t begin, uint64_t end) const;
  // Whether `path` is the file of a region.
  bool maps_file(const std::string& path) const;
  const std::vector<CodeRegion>& regions() const { return regions_; }
  // The maps lines the regions came from: equal texts, equal code.
  const std::string& source() const { return source_; }
  // Whether every region of `older` is here still, as its maps line was
  // (same range, permissions, offset, file): its code is then unchanged.
  bool keeps(const TranslatableCode& older) const;

 private:
  std::vector<CodeRegion> regions_;  // ascending
  std::string source_;
  std::vector<std::string> lines_;  // of source_, sorted
};

}  // namespace stub::tracing
