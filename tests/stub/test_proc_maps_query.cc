// stub/process/proc_maps.h read_shared_maps: the shared mappings asked of
// the kernel (PROCMAP_QUERY) are those /proc/PID/maps marks 's'.
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>

#include "stub/process/proc_maps.h"

namespace test_proc_maps_query {  // this file's own names, apart in a unity build

using stub::process::MemoryMapping;

namespace {

std::vector<MemoryMapping> shared_from_text(pid_t pid) {
  std::vector<MemoryMapping> out;
  for (MemoryMapping& m : stub::process::read_maps(pid)) {
    if (m.shared) out.push_back(std::move(m));
  }
  return out;
}

bool same(const std::vector<MemoryMapping>& a, const std::vector<MemoryMapping>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].begin != b[i].begin || a[i].end != b[i].end || a[i].readable != b[i].readable ||
        a[i].writable != b[i].writable || a[i].executable != b[i].executable || !a[i].shared || !b[i].shared) {
      return false;
    }
  }
  return true;
}

bool kernel_at_least(int major, int minor) {
  utsname u{};
  int have_major = 0, have_minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &have_major, &have_minor) == 2 &&
         (have_major > major || (have_major == major && have_minor >= minor));
}

}  // namespace

TEST_CASE("the shared mappings queried are the ones the maps mark shared", "[proc_maps]") {
  const long page = ::sysconf(_SC_PAGESIZE);
  void* rw = ::mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void* ro = ::mmap(nullptr, page, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void* none = ::mmap(nullptr, page, PROT_NONE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void* priv = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(rw != MAP_FAILED);
  REQUIRE(ro != MAP_FAILED);
  REQUIRE(none != MAP_FAILED);
  REQUIRE(priv != MAP_FAILED);

  const std::vector<MemoryMapping> expected = shared_from_text(::getpid());
  auto holds = [&](void* p) {
    const auto a = reinterpret_cast<uint64_t>(p);
    return std::any_of(expected.begin(), expected.end(), [&](const MemoryMapping& m) { return m.begin <= a && a < m.end; });
  };
  CHECK(holds(rw));
  CHECK(holds(ro));
  CHECK(holds(none));
  CHECK_FALSE(holds(priv));

  auto shared = stub::process::read_shared_maps(::getpid());
  REQUIRE(shared);
  CHECK(same(*shared, expected));
  auto queried = stub::process::query_shared_maps(::getpid());
  if (kernel_at_least(6, 11)) {
    REQUIRE(queried);  // the query path is the one taken here
    CHECK(same(*queried, expected));
  }
  CHECK_FALSE(stub::process::read_shared_maps(0x7ffffff0));  // no such process

  ::munmap(rw, 3 * page);
  ::munmap(ro, page);
  ::munmap(none, page);
  ::munmap(priv, page);
}

}  // namespace test_proc_maps_query
