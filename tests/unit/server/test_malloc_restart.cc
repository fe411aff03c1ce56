// The environment btstub starts itself again with (huge pages for its own
// heap) and the one it gives back to the programs it launches
// (stub/server/malloc_restart.h).
#include <catch2/catch.hpp>

#include "stub/server/malloc_restart.h"

namespace test_malloc_restart {  // this file's own names, apart in a unity build

using stub::server::given_environment;
using stub::server::restart_environment;
using Env = std::vector<std::string>;
const std::string kSettings = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432";

TEST_CASE("without GLIBC_TUNABLES, the setting and the marker go last and come off again", "[malloc_restart]") {
  const Env given{"A=1", "PATH=/usr/bin:/bin", "Z=x y"};
  auto started = restart_environment(given);
  REQUIRE(started);
  CHECK(*started == Env{"A=1", "PATH=/usr/bin:/bin", "Z=x y", "GLIBC_TUNABLES=" + kSettings,
                        "BTSTUB_GIVEN_GLIBC_TUNABLES=absent"});
  CHECK(given_environment(*started) == given);
}

TEST_CASE("the user's GLIBC_TUNABLES keeps its place and its value", "[malloc_restart]") {
  const Env given{"A=1", "GLIBC_TUNABLES=glibc.malloc.check=0:glibc.cpu.hwcaps=-AVX2", "B=2"};
  auto started = restart_environment(given);
  REQUIRE(started);
  CHECK(*started == Env{"A=1", "GLIBC_TUNABLES=glibc.malloc.check=0:glibc.cpu.hwcaps=-AVX2:" + kSettings,
                        "B=2", "BTSTUB_GIVEN_GLIBC_TUNABLES=was:glibc.malloc.check=0:glibc.cpu.hwcaps=-AVX2"});
  CHECK(given_environment(*started) == given);
  // glibc's loader ends each value it takes with a NUL in the
  // environment's own bytes: what btstub reads back is cut short there.
  Env cut = *started;
  cut[1] = "GLIBC_TUNABLES=glibc.malloc.check=0";
  CHECK(given_environment(cut) == given);
  const Env empty{"GLIBC_TUNABLES="};
  auto from_empty = restart_environment(empty);
  REQUIRE(from_empty);
  CHECK(from_empty->front() == "GLIBC_TUNABLES=" + kSettings);
  CHECK(given_environment(*from_empty) == empty);
}

TEST_CASE("no second start: already started, the user's own hugetlb or top_pad, two GLIBC_TUNABLES", "[malloc_restart]") {
  CHECK_FALSE(restart_environment({"A=1", "BTSTUB_GIVEN_GLIBC_TUNABLES=absent"}));
  CHECK_FALSE(restart_environment({"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"}));
  CHECK_FALSE(restart_environment({"GLIBC_TUNABLES=glibc.malloc.check=0:glibc.malloc.top_pad=0"}));
  CHECK_FALSE(restart_environment({"GLIBC_TUNABLES=a=1", "GLIBC_TUNABLES=b=2"}));
  // Nothing to give back in an environment btstub did not change.
  const Env plain{"A=1", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0"};
  CHECK(given_environment(plain) == plain);
  CHECK(given_environment({}) == Env{});
}

}  // namespace test_malloc_restart
