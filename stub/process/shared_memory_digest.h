#pragma once
// A digest of the memory a program shares with other processes, to tell
// whether a re-run from a checkpoint saw what the program saw.
//
// A checkpoint holds a private snapshot of each shared mapping as it was
// when taken (privatize_shared_mappings, ptrace_copy_program.cc); a copy
// re-run from it sees that plus its own writes. Another process writing
// there meanwhile is not re-run: where the program read such a value the
// copy goes another way, or arrives with other values. Both sides' shared
// bytes are digested where the stretch ends (the next barrier or
// checkpoint, or the present), the program's as it ran and the re-run's;
// when they differ, the copy does not stand for the program there
// (stub/replay/past_state.cc).
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "protocol/expected.h"

namespace stub::process {

// The shared mappings a checkpoint holds private snapshots of, [begin, end)
// each, ascending.
using SharedRanges = std::vector<std::pair<uint64_t, uint64_t>>;

// Reads the readable prefix of [addr, addr + len): an error (or nothing)
// when its first byte cannot be read.
using MemoryRead = std::function<btstub::Expected<std::vector<uint8_t>>(uint64_t addr, std::size_t len)>;

// The digest built piece by piece, in address order: each range's bounds,
// then its bytes as read and where a page cannot be read. For a reader
// that already holds the bytes (a checkpoint filling its snapshot).
class SharedDigest {
 public:
  void range(uint64_t begin, uint64_t end);
  void bytes(std::span<const uint8_t> bytes);
  void hole(uint64_t page);
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// The digest of `ranges` as `read` gives them: their bounds, their bytes,
// and where a page cannot be read. Equal digests of two readings: the same
// bytes, the same unreadable pages (within the digest's 64 bits).
uint64_t shared_memory_digest(const SharedRanges& ranges, const MemoryRead& read);

}  // namespace stub::process
