#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "stub/replay/replay_engine.h"
#include "tests/unit/decoder/replay_fixture.h"

namespace test_replay_engine {  // this file's own names, apart in a unity build

using decoder::ReplayStop;
using protocol::Amd64Reg;
using replay_test::kB0;
using replay_test::kR0;

namespace {

class FakeMaps : public stub::replay::MappingInfo {
 public:
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  int refreshes = 0;
  std::optional<std::pair<uint64_t, uint64_t>> read_only_range(uint64_t addr) override {
    for (auto& r : ranges) {
      if (addr >= r.first && addr < r.second) return r;
    }
    return std::nullopt;
  }
  void refresh() override { ++refreshes; }
};

struct EngineFixture {
  test::FakeProcess process;
  test::FakeTraceBackend backend;
  FakeMaps* maps = nullptr;
  std::unique_ptr<stub::replay::ReplayEngine> engine;

  EngineFixture() {
    const auto& code = replay_test::code();
    for (std::size_t i = 0; i < code.size(); ++i) process.memory[replay_test::kBase + i] = code[i];
    // Live stack: garbage where the past differs, so a live read would show.
    for (uint64_t a = kR0 - 64; a < kR0 + 16; ++a) process.memory[a] = 0xee;
    auto& regs = process.regs[100];
    regs.set_u64(Amd64Reg::rip, 0x401017);
    regs.set_u64(Amd64Reg::rsp, kR0);
    regs.set_u64(Amd64Reg::rbp, kB0);
    REQUIRE(backend.enable(100).ok());
    backend.replace_trace(100, replay_test::trace(true));
    auto owned = std::make_unique<FakeMaps>();
    owned->ranges = {{replay_test::kBase, replay_test::kBase + 0x1000}};
    maps = owned.get();
    engine = std::make_unique<stub::replay::ReplayEngine>(process, backend, std::move(owned));
  }

  uint64_t u64(const std::vector<uint8_t>& bytes) {
    REQUIRE(bytes.size() == 8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    return v;
  }
};

}  // namespace

TEST_CASE("replay engine: registers in the past are rip/rsp/rbp, the rest unavailable") {
  EngineFixture f;
  REQUIRE_FALSE(f.engine->replaying(100));
  auto live = f.engine->registers(100);
  REQUIRE(live.ok());
  REQUIRE(live->available(static_cast<unsigned>(Amd64Reg::rax)));  // live: the process's file

  auto stop = f.engine->continue_back(100, {0x401024});
  REQUIRE(stop.ok());
  REQUIRE(*stop == ReplayStop::Breakpoint);
  REQUIRE(f.engine->replaying(100));
  REQUIRE(f.maps->refreshes == 1);
  auto regs = f.engine->registers(100);
  REQUIRE(regs.ok());
  CHECK(regs->get_u64(Amd64Reg::rip) == 0x401024);
  CHECK(regs->get_u64(Amd64Reg::rsp) == kR0 - 40);
  CHECK(regs->get_u64(Amd64Reg::rbp) == kR0 - 40);
  CHECK_FALSE(regs->available(static_cast<unsigned>(Amd64Reg::rax)));
  CHECK_FALSE(regs->available(static_cast<unsigned>(Amd64Reg::eflags)));
  CHECK(f.engine->status().find("instruction 27 of 34") != std::string::npos);
  // Past the bound the status tells the branch at once, not the
  // instruction (which decodes the whole history: seconds at millions).
  const std::string quick = f.engine->status(2);
  CHECK(quick.find("replaying at branch ") != std::string::npos);
  CHECK(quick.find("instructions are counted in histories of up to 2 branches") != std::string::npos);
  CHECK(quick.find("instruction 27") == std::string::npos);
}

TEST_CASE("replay engine: memory in the past") {
  EngineFixture f;
  REQUIRE(*f.engine->continue_back(100, {0x401024}) == ReplayStop::Breakpoint);
  auto ret = f.engine->read_memory(100, kR0 - 32, 8);
  REQUIRE(ret.ok());
  CHECK(f.u64(*ret) == 0x401012);
  auto saved = f.engine->read_memory(100, kR0 - 40, 8);
  REQUIRE(saved.ok());
  CHECK(f.u64(*saved) == kR0 - 8);
  // Code is read-only: the live bytes are the past bytes.
  auto code = f.engine->read_memory(100, 0x401024, 2);
  REQUIRE(code.ok());
  CHECK(*code == std::vector<uint8_t>{0x6a, 0x2a});
  // A local of main: writable, not determined by the history.
  auto local = f.engine->read_memory(100, kR0 - 16, 8);
  REQUIRE_FALSE(local.ok());
  CHECK(local.error().code == btstub::ErrorCode::MemoryFault);
  // A read running from a known slot into unknown bytes is cut short.
  auto partial = f.engine->read_memory(100, kR0 - 40, 24);
  REQUIRE(partial.ok());
  CHECK(partial->size() == 16);
  // Writes are refused while replaying.
  auto write = f.engine->check_writable(100);
  REQUIRE_FALSE(write.ok());
  CHECK(write.error().message.find("replaying") != std::string::npos);
}

TEST_CASE("replay engine: going forward to the live end ends the replay") {
  EngineFixture f;
  REQUIRE(*f.engine->step_back(100) == ReplayStop::Moved);
  REQUIRE(*f.engine->step_back(100) == ReplayStop::Moved);
  REQUIRE(f.engine->registers(100)->get_u64(Amd64Reg::rip) == 0x401014);
  REQUIRE(*f.engine->step_forward(100) == ReplayStop::Moved);
  REQUIRE(*f.engine->step_forward(100) == ReplayStop::HistoryEnd);
  REQUIRE_FALSE(f.engine->replaying(100));
  REQUIRE(f.engine->check_writable(100).ok());
  // Live reads go to the process again.
  auto live = f.engine->read_memory(100, kR0 - 16, 1);
  REQUIRE(live.ok());
  CHECK((*live)[0] == 0xee);

  REQUIRE(*f.engine->continue_back(100, {}) == ReplayStop::HistoryBegin);
  REQUIRE(f.engine->registers(100)->get_u64(Amd64Reg::rip) == 0x401030);
  REQUIRE(*f.engine->continue_forward(100, {}) == ReplayStop::HistoryEnd);
  REQUIRE_FALSE(f.engine->replaying(100));
  REQUIRE(f.engine->status().find("Not replaying") != std::string::npos);
}

TEST_CASE("replay engine: a thread without history is at its beginning at once") {
  EngineFixture f;
  f.process.threads_.push_back(101);
  f.process.regs[101] = f.process.regs[100];
  auto stop = f.engine->step_back(101);
  REQUIRE(stop.ok());
  CHECK(*stop == ReplayStop::HistoryBegin);
  CHECK_FALSE(f.engine->replaying(101));
  CHECK(*f.engine->continue_back(101, {0x401000}) == ReplayStop::HistoryBegin);
}

TEST_CASE("replay engine: go_live drops every position") {
  EngineFixture f;
  REQUIRE(*f.engine->step_back(100) == ReplayStop::Moved);
  REQUIRE(f.engine->any_replaying());
  f.engine->go_live();
  CHECK_FALSE(f.engine->replaying(100));
  CHECK(f.engine->registers(100)->get_u64(Amd64Reg::rip) == 0x401017);
}

// A shared mapping the program cannot write is not read-only in time:
// another process or another mapping of the file changes it. Nor is
// anonymous data: the program may have written it before an mprotect, or
// mapped it only since ([vvar] changes by itself).
TEST_CASE("read-only ranges come from /proc/PID/maps text, shared mappings and anonymous data left out") {
  const std::string maps =
      "00400000-00401000 r--p 00000000 08:01 1 /bin/prog\n"
      "00401000-00402000 r-xp 00001000 08:01 1 /bin/prog\n"
      "00403000-00404000 rw-p 00003000 08:01 1 /bin/prog\n"
      "200000000-200001000 r--p 00000000 00:00 0 \n"
      "7ffe0000-7fff0000 rw-p 00000000 00:00 0 [stack]\n"
      "7ffff7fc4000-7ffff7fc8000 r--p 00000000 00:00 0 [vvar]\n"
      "7ffff7fc8000-7ffff7fca000 r-xp 00000000 00:00 0 [vdso]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"
      "7f0000000000-7f0000001000 r--s 00000000 08:01 2 /tmp/db-shm\n"
      "garbage line\n";
  auto ranges = stub::replay::parse_read_only_maps(maps);
  REQUIRE(ranges.size() == 3);
  CHECK(ranges[0] == std::pair<uint64_t, uint64_t>{0x400000, 0x401000});
  CHECK(ranges[1] == std::pair<uint64_t, uint64_t>{0x401000, 0x402000});
  CHECK(ranges[2] == std::pair<uint64_t, uint64_t>{0x7ffff7fc8000, 0x7ffff7fca000});
}

}  // namespace test_replay_engine
