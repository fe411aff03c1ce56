// qXfer:btrace:read of a 12-million-branch BTS trace through Session (the
// fake backend holds it; no process): gdb gives up on a reply after its
// remote timeout (2 s, three tries), and the whole document is ~540 MB of
// text. The first chunk must come at once and reading the whole document
// must not hold it: the test prints both figures and bounds them far
// beyond what they are (milliseconds, a few MB) and far below what
// building the document whole cost (9.8 s and 1.4 GB at this size).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "stub/session/session.h"

namespace test_btrace_large_read {  // this file's own names, apart in a unity build

// AddressSanitizer holds freed memory in its quarantine (256 MB by
// default): under it the peak resident set tells nothing of what btstub
// keeps, and is not bounded here (the plain build's run bounds it).
#if defined(__SANITIZE_ADDRESS__)
#define BTSTUB_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BTSTUB_TEST_ASAN 1
#endif
#endif
#ifndef BTSTUB_TEST_ASAN
#define BTSTUB_TEST_ASAN 0
#endif

namespace {

// The process's peak resident set (VmHWM), in KiB; -1 when unknown.
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Starts the peak over from the present resident set (proc(5): clear_refs 5).
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("a 12-million-branch BTS trace: the first chunk at once, the whole read in bounded memory",
          "[btrace][large]") {
  test::FakeProcess process;
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, &process};
  session.trace_backend = &backend;
  auto ask = [&](const std::string& payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  };
  REQUIRE(ask("Qbtrace-conf:bts:size=0x80000000") == "OK");  // gdb's "unlimited": 89 million records
  REQUIRE(ask("Qbtrace:bts") == "OK");
  constexpr uint64_t kBranches = 12'000'000;
  constexpr uint64_t kCode = 0x555555554000;  // addresses as long as a PIE program's
  decoder::BlockTrace& trace = backend.trace_of(100);
  for (uint64_t i = 0; i < kBranches; ++i) trace.append(kCode + (i * 40) % 0x100000 + 30, kCode + (i * 40 + 40) % 0x100000);
  REQUIRE(trace.size() == kBranches);
  process.regs[100].set_u64(protocol::Amd64Reg::rip, kCode + 0x1234);

  const bool peak_known = !BTSTUB_TEST_ASAN && reset_peak_rss() && peak_rss_kib() > 0;
  const long rss_before = peak_rss_kib();
  const auto start = std::chrono::steady_clock::now();
  std::string reply = ask("qXfer:btrace:read:all:0,3fff");
  const double first_reply = seconds_since(start);
  REQUIRE(reply.front() == 'm');
  CHECK(reply.rfind("m<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n<block begin=\"0x", 0) == 0);

  // The rest as gdb reads it: each chunk at the offset where the last ended
  // (the document has no characters that need escaping).
  uint64_t offset = reply.size() - 1;
  uint64_t lines = 0;  // one a block, two of header, one of footer
  std::string tail;
  auto count = [&](std::string_view text) {
    for (char c : text) lines += c == '\n';
  };
  count(std::string_view(reply).substr(1));
  while (reply.front() == 'm') {
    reply = ask("qXfer:btrace:read:all:" + [](uint64_t v) {
      char hex[24];
      std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(v));
      return std::string(hex);
    }(offset) + ",3fff");
    REQUIRE((reply.front() == 'm' || reply.front() == 'l'));
    count(std::string_view(reply).substr(1));
    offset += reply.size() - 1;
    tail = reply;
  }
  const double whole_read = seconds_since(start);
  const long growth_kib = peak_rss_kib() - rss_before;
  std::printf("qXfer:btrace:read of %llu branches: first reply %.1f ms, whole document (%llu MB) %.1f s, "
              "peak RSS growth %ld KiB (trace store %zu KiB)%s\n",
              static_cast<unsigned long long>(kBranches), first_reply * 1e3,
              static_cast<unsigned long long>(offset >> 20), whole_read, growth_kib, trace.memory_bytes() >> 10,
              peak_known ? "" : " (peak RSS not measured here: no /proc, or AddressSanitizer's quarantine)");

  CHECK(lines - 3 == kBranches + 1);  // one block per branch and the one ending at the pc
  CHECK(tail.size() > 10);
  CHECK(tail.substr(tail.size() - 10) == "</btrace>\n");
  CHECK(first_reply < 1.0);  // gdb's remote timeout is 2 s
  if (peak_known) CHECK(growth_kib < 64 * 1024);
}

}  // namespace test_btrace_large_read
