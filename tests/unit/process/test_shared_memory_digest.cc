// stub/process/shared_memory_digest.h: equal digests for equal shared
// bytes however they are read, different ones where a byte or a readable
// page differs.
#include <catch2/catch.hpp>

#include <map>

#include "stub/process/shared_memory_digest.h"

namespace test_shared_memory_digest {  // this file's own names, apart in a unity build

using stub::process::MemoryRead;
using stub::process::SharedRanges;
using stub::process::shared_memory_digest;

namespace {

constexpr uint64_t kPage = 4096;

// Memory of whole pages by address; `max_read` bounds one read (a prefix,
// as process_vm_readv gives), ending at a page bound.
struct FakeMemory {
  std::map<uint64_t, std::vector<uint8_t>> pages;
  std::size_t max_read = 1 << 20;
  MemoryRead reader() const {
    return [this](uint64_t addr, std::size_t len) -> btstub::Expected<std::vector<uint8_t>> {
      std::vector<uint8_t> out;
      for (uint64_t at = addr; at < addr + len && out.size() < max_read;) {
        auto page = pages.find(at & ~(kPage - 1));
        if (page == pages.end()) break;
        const uint64_t offset = at & (kPage - 1);
        const std::size_t n = std::min<std::size_t>({kPage - offset, addr + len - at, max_read - out.size()});
        out.insert(out.end(), page->second.begin() + offset, page->second.begin() + offset + n);
        at += n;
      }
      if (out.empty()) return btstub::make_error(btstub::ErrorCode::MemoryFault, "Cannot access memory");
      return out;
    };
  }
};

FakeMemory three_pages() {
  FakeMemory memory;
  for (uint64_t page : {0x10000, 0x11000, 0x12000}) {
    memory.pages[page] = std::vector<uint8_t>(kPage);
    for (std::size_t i = 0; i < kPage; ++i) memory.pages[page][i] = static_cast<uint8_t>(page / kPage + i);
  }
  return memory;
}

}  // namespace

TEST_CASE("the same shared bytes digest the same, read in any pieces", "[shared_digest]") {
  const SharedRanges ranges{{0x10000, 0x13000}};
  FakeMemory a = three_pages();
  FakeMemory b = three_pages();
  b.max_read = kPage;  // one page a read
  CHECK(shared_memory_digest(ranges, a.reader()) == shared_memory_digest(ranges, b.reader()));
  CHECK(shared_memory_digest({}, a.reader()) == shared_memory_digest({}, {}));
}

TEST_CASE("a byte, a readable page or the ranges differing change the digest", "[shared_digest]") {
  const SharedRanges ranges{{0x10000, 0x13000}};
  const FakeMemory before = three_pages();
  const uint64_t digest = shared_memory_digest(ranges, before.reader());

  FakeMemory written = three_pages();
  written.pages[0x11000][8] ^= 1;  // another process wrote one bit
  CHECK(shared_memory_digest(ranges, written.reader()) != digest);

  FakeMemory hole = three_pages();
  hole.pages.erase(0x12000);  // unmapped in a copy
  FakeMemory zeros = three_pages();
  zeros.pages[0x12000].assign(kPage, 0);
  CHECK(shared_memory_digest(ranges, hole.reader()) != digest);
  CHECK(shared_memory_digest(ranges, hole.reader()) != shared_memory_digest(ranges, zeros.reader()));

  CHECK(shared_memory_digest({{0x10000, 0x12000}}, before.reader()) != digest);
  CHECK(shared_memory_digest({{0x10000, 0x11000}, {0x11000, 0x13000}}, before.reader()) != digest);
}

TEST_CASE("built piece by piece, as a checkpoint fills its snapshot, the digest is the reader's", "[shared_digest]") {
  FakeMemory memory = three_pages();
  memory.pages.erase(0x11000);  // the middle page cannot be read
  stub::process::SharedDigest pieces;
  pieces.range(0x10000, 0x13000);
  pieces.bytes(memory.pages[0x10000]);
  pieces.hole(0x11000);
  pieces.bytes(memory.pages[0x12000]);
  CHECK(pieces.value() == shared_memory_digest({{0x10000, 0x13000}}, memory.reader()));
}

}  // namespace test_shared_memory_digest
