// qXfer:btrace for a thread enabled with Qbtrace:pt, through Session against
// FakeProcess (code in its memory) and FakeTraceBackend: the <pt> documents
// gdb reads, and what libipt's decoder makes of their packets.
#include <catch2/catch.hpp>
#include <intel-pt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "stub/session/session.h"
#include "tests/common/pt_packets.h"

namespace test_btrace_pt_session {  // this file's own names, apart in a unity build

namespace {

using pt_packets::raw_of;

const std::string kHead = "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n";
const std::string kPtHead = kHead + "<pt>\n<pt-config>\n</pt-config>\n";
const std::string kPtTail = "</pt>\n</btrace>\n";

struct Fixture {
  test::FakeProcess process;
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  // 0x401000: nop; 0x401001: nop; 0x401002: jne 0x401000 (taken in the loop)
  Fixture() {
    session.trace_backend = &backend;
    const uint8_t code[] = {0x90, 0x90, 0x75, 0xfc};
    for (uint64_t i = 0; i < sizeof code; ++i) process.memory[0x401000 + i] = code[i];
  }
  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  void set_pc(uint64_t pc) { process.regs[100].set_u64(protocol::Amd64Reg::rip, pc); }
  // Round the loop `times` times; the thread then stands at 0x401001.
  void loop(int times) {
    for (int i = 0; i < times; ++i) backend.trace_of(100).append(0x401002, 0x401000);
    set_pc(0x401001);
  }
};

int read_fake(uint8_t* buffer, size_t size, const pt_asid*, uint64_t ip, void* context) {
  auto* process = static_cast<test::FakeProcess*>(context);
  auto bytes = process->read_memory(ip, size);
  if (!bytes) return -pte_nomap;
  std::copy(bytes->begin(), bytes->end(), buffer);
  return static_cast<int>(bytes->size());
}

// The instructions libipt's decoder finds in `packets` over the fake's code.
std::vector<uint64_t> decode(std::vector<uint8_t> packets, test::FakeProcess& process) {
  return pt_packets::instructions(std::move(packets), read_fake, &process);
}

}  // namespace

TEST_CASE("pt all: the whole trace as PT packets, up to the current pc", "[btrace]") {
  Fixture f;
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  f.loop(2);
  std::string reply = f.ask("qXfer:btrace:read:all:0,fffff");
  REQUIRE(reply.rfind("l" + kPtHead + "<raw>\n", 0) == 0);
  CHECK(reply.substr(reply.size() - kPtTail.size()) == kPtTail);
  CHECK(decode(raw_of(reply), f.process) ==
        std::vector<uint64_t>{0x401000, 0x401001, 0x401002, 0x401000, 0x401001, 0x401002, 0x401000});
  // `all` does not depend on earlier reads.
  CHECK(f.ask("qXfer:btrace:read:all:0,fffff") == reply);
}

TEST_CASE("pt has no delta (gdb then reads new); new is empty when nothing was added", "[btrace]") {
  Fixture f;
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  f.loop(1);
  CHECK(f.ask("qXfer:btrace:read:delta:0,fffff") == "E.Generic Error.");
  const std::string first = f.ask("qXfer:btrace:read:new:0,fffff");
  CHECK(decode(raw_of(first), f.process) == std::vector<uint64_t>{0x401000, 0x401001, 0x401002, 0x401000});
  CHECK(f.ask("qXfer:btrace:read:new:0,fffff") == "l" + kPtHead + kPtTail);
  // No branch, but the thread moved on: the stream ends elsewhere.
  f.set_pc(0x401002);
  CHECK(decode(raw_of(f.ask("qXfer:btrace:read:new:0,fffff")), f.process) ==
        std::vector<uint64_t>{0x401000, 0x401001, 0x401002, 0x401000, 0x401001});
  CHECK(f.ask("qXfer:btrace:read:new:0,fffff") == "l" + kPtHead + kPtTail);
  f.loop(1);
  const std::string second = f.ask("qXfer:btrace:read:new:0,fffff");
  CHECK(decode(raw_of(second), f.process) ==
        std::vector<uint64_t>{0x401000, 0x401001, 0x401002, 0x401000, 0x401001, 0x401002, 0x401000});
}

TEST_CASE("pt after the oldest branches were dropped starts in the middle of the loop", "[btrace]") {
  Fixture f;
  // A whole-program trace of two branches (a gdb wish is at least a page),
  // adopted by Qbtrace:pt: its pt size is what two branches take.
  stub::tracing::TraceConfig two = f.backend.config();
  two.buffer_bytes = 2 * decoder::BlockTrace::kBtsRecordSize;
  f.backend.set_config(two);
  REQUIRE(f.backend.enable_all().ok());
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff").find("<pt size=\"0x4\"/>") != std::string::npos);
  f.loop(5);
  CHECK(decode(raw_of(f.ask("qXfer:btrace:read:all:0,fffff")), f.process) ==
        std::vector<uint64_t>{0x401000, 0x401001, 0x401002, 0x401000, 0x401001, 0x401002, 0x401000});
}

TEST_CASE("a pt document is read in chunks from one snapshot", "[btrace]") {
  Fixture f;
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  f.loop(3);
  const std::string whole = f.ask("qXfer:btrace:read:new:0,fffff").substr(1);
  REQUIRE(f.ask("Qbtrace:off") == "OK");
  f.backend.replace_trace(100, decoder::BlockTrace(0x401000, 16));
  f.set_pc(0x401000);
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  f.loop(3);
  std::string got = f.ask("qXfer:btrace:read:new:0,20").substr(1);
  f.loop(1);  // the thread moves on between chunks
  for (uint64_t off = 0x20; off < whole.size(); off += 0x20) {
    char packet[64];
    std::snprintf(packet, sizeof packet, "qXfer:btrace:read:new:%llx,20", static_cast<unsigned long long>(off));
    got += f.ask(packet).substr(1);
  }
  CHECK(got == whole);
}

TEST_CASE("whole-program recording adopted by Qbtrace:pt: gdb's history begins there", "[btrace]") {
  Fixture f;
  REQUIRE(f.backend.enable_all().ok());
  f.loop(3);
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") == "E.Btrace not enabled.");
  REQUIRE(f.ask("Qbtrace:pt") == "OK");  // at 0x401001
  f.loop(1);
  // As a bts trace is through gdb's delta reads: from where gdb turned it on.
  CHECK(decode(raw_of(f.ask("qXfer:btrace:read:all:0,fffff")), f.process) ==
        std::vector<uint64_t>{0x401001, 0x401002, 0x401000});
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff").find("<pt size=") != std::string::npos);
  REQUIRE(f.ask("Qbtrace:off") == "OK");
  CHECK(f.backend.enabled(100));
}

namespace {

// The fake program's code as a BlockTrace reads it (decoder::BlockTrace::set_code).
class FakeCode final : public decoder::CodeReader {
 public:
  explicit FakeCode(test::FakeProcess& process) : process_(process) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    std::size_t n = 0;
    for (; n < len; ++n) {
      auto byte = process_.read_memory(addr + n, 1);
      if (!byte || byte->empty()) break;
      out[n] = (*byte)[0];
    }
    return n;
  }

 private:
  test::FakeProcess& process_;
};

bool contains(const std::vector<uint8_t>& haystack, std::span<const uint8_t> needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

}  // namespace

TEST_CASE("pt: the store's sealed PT chunks go into the document as stored", "[btrace]") {
  Fixture f;
  REQUIRE(f.ask("Qbtrace-conf:pt:size=0x100000") == "OK");
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  decoder::BlockTrace& trace = f.backend.trace_of(100);
  trace.set_code(std::make_shared<FakeCode>(f.process));
  const int rounds = 3 * static_cast<int>(decoder::BlockTrace::kChunkBranches) + 5;
  f.loop(rounds);
  REQUIRE(trace.pt_chunks() == 3);
  const std::vector<uint8_t> raw = raw_of(f.ask("qXfer:btrace:read:all:0,fffff"));
  // Sealed chunks 1 and 2 (chunk 0 begins where gdb's history does, and
  // is encoded from the pc gdb turned tracing on at).
  const auto stored = trace.stored_segments(0);
  REQUIRE(stored.size() == 3);
  CHECK(contains(raw, stored[1].packets));
  CHECK(contains(raw, stored[2].packets));
  std::vector<uint64_t> want;
  for (int i = 0; i < rounds; ++i) want.insert(want.end(), {0x401000, 0x401001, 0x401002});
  want.push_back(0x401000);
  CHECK(decode(raw, f.process) == want);

  // Code that changed under the chunks: their packets are not passed on;
  // the document shows what the store reads (gaps).
  f.process.memory[0x401001] = 0xfc;  // cld
  CHECK(trace.stored_segments(0).empty());
  const std::vector<uint8_t> changed = raw_of(f.ask("qXfer:btrace:read:all:0,fffff"));
  for (const auto& segment : stored) CHECK_FALSE(contains(changed, segment.packets));
}

namespace {

// The whole `all` document, read on as gdb reads it from `reply` (the
// answer at offset 0): chunks of 0x3fff bytes at rising offsets.
std::string read_on(Fixture& f, std::string reply) {
  REQUIRE((reply.front() == 'm' || reply.front() == 'l'));
  std::string document = reply.substr(1);
  while (reply.front() == 'm') {
    char packet[64];
    std::snprintf(packet, sizeof packet, "qXfer:btrace:read:all:%zx,3fff", document.size());
    reply = f.ask(packet);
    REQUIRE((reply.front() == 'm' || reply.front() == 'l'));
    document += reply.substr(1);
  }
  return document;
}

}  // namespace

TEST_CASE("pt: a long trace is written in pieces as gdb reads it, and decodes whole", "[btrace]") {
  for (bool stored : {false, true}) {
    Fixture f;
    REQUIRE(f.ask("Qbtrace-conf:pt:size=0x1000000") == "OK");
    REQUIRE(f.ask("Qbtrace:pt") == "OK");
    decoder::BlockTrace& trace = f.backend.trace_of(100);
    if (stored) trace.set_code(std::make_shared<FakeCode>(f.process));
    // Explicit stretches longer than one encoded piece, or sealed chunks.
    const int rounds = 3 * static_cast<int>(stub::session::PtDocument::kPieceBranches) + 7;
    f.loop(rounds);
    CHECK(trace.pt_chunks() == (stored ? trace.size() / decoder::BlockTrace::kChunkBranches : 0));
    const std::string document = read_on(f, f.ask("qXfer:btrace:read:all:0,3fff"));
    REQUIRE(document.rfind(kPtHead + "<raw>\n", 0) == 0);
    CHECK(document.substr(document.size() - kPtTail.size()) == kPtTail);
    std::vector<uint64_t> want;
    for (int i = 0; i < rounds; ++i) want.insert(want.end(), {0x401000, 0x401001, 0x401002});
    want.push_back(0x401000);
    CHECK(decode(raw_of("l" + document), f.process) == want);
  }
}

TEST_CASE("pt: the first chunk of a 12-million-branch trace comes at once", "[btrace][large]") {
  Fixture f;
  REQUIRE(f.ask("Qbtrace-conf:pt:size=0x80000000") == "OK");
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  const int rounds = 12'000'000;
  f.loop(rounds);
  const auto start = std::chrono::steady_clock::now();
  std::string reply = f.ask("qXfer:btrace:read:all:0,3fff");
  const double first_reply = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(reply.rfind("m" + kPtHead + "<raw>\n", 0) == 0);
  const std::string document = read_on(f, reply);
  const double whole = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("pt qXfer:btrace:read of %d branches: first reply %.1f ms, whole document (%zu KB) %.1f s\n", rounds,
              first_reply * 1e3, document.size() >> 10, whole);
  CHECK(first_reply < 1.0);  // gdb's remote timeout is 2 s
  CHECK(document.substr(document.size() - kPtTail.size()) == kPtTail);
}

}  // namespace test_btrace_pt_session
