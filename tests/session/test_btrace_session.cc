// The btrace packets through Session against FakeProcess and
// FakeTraceBackend: every reply is the exact payload gdb would receive.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "stub/session/handlers.h"
#include "stub/session/session.h"

namespace test_btrace_session {  // this file's own names, apart in a unity build

namespace {

const std::string kHead = "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n";
const std::string kTail = "</btrace>\n";

std::string block(uint64_t begin, uint64_t end) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "<block begin=\"0x%llx\" end=\"0x%llx\"/>\n",
                static_cast<unsigned long long>(begin), static_cast<unsigned long long>(end));
  return buf;
}

struct Fixture {
  test::FakeProcess process;
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  Fixture() { session.trace_backend = &backend; }

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  void set_pc(pid_t tid, uint64_t pc) { process.regs[tid].set_u64(protocol::Amd64Reg::rip, pc); }
  // Enables thread 100 (origin 0x401000) and records two taken branches;
  // the thread now stands at 0x403008.
  void trace_two_branches() {
    REQUIRE(ask("Qbtrace:bts") == "OK");
    backend.trace_of(100).append(0x401005, 0x402000);
    backend.trace_of(100).append(0x402010, 0x403000);
    set_pc(100, 0x403008);
  }
};

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

const char* const kFeatures[] = {"Qbtrace:bts+",          "Qbtrace:pt+",          "Qbtrace:off+",
                                 "Qbtrace-conf:bts:size+", "Qbtrace-conf:pt:size+", "qXfer:btrace:read+",
                                 "qXfer:btrace-conf:read+"};

}  // namespace

TEST_CASE("btrace features are advertised only with a trace backend", "[btrace]") {
  Fixture with;
  std::string reply = with.ask("qSupported:multiprocess+;swbreak+");
  for (const char* feature : kFeatures) CHECK(contains(reply, std::string(";") + feature));

  Fixture without;
  without.session.trace_backend = nullptr;
  std::string plain = without.ask("qSupported:multiprocess+;swbreak+");
  CHECK_FALSE(contains(plain, "btrace"));
}

TEST_CASE("without a backend every btrace packet says the target cannot trace", "[btrace]") {
  Fixture f;
  f.session.trace_backend = nullptr;
  const std::string error = "E.Target does not support branch tracing.";
  CHECK(f.ask("Qbtrace:bts") == error);
  CHECK(f.ask("Qbtrace:off") == error);
  CHECK(f.ask("Qbtrace-conf:bts:size=0x1000") == error);
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == error);
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") == error);
}

TEST_CASE("without a program there is no single thread to trace", "[btrace]") {
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, nullptr};
  session.trace_backend = &backend;
  const std::string error = "E.Must select a single thread.";
  CHECK(session.handle_packet("Qbtrace:bts").payload == error);
  CHECK(session.handle_packet("Qbtrace-conf:bts:size=0x1000").payload == error);
  CHECK(session.handle_packet("qXfer:btrace:read:all:0,fff").payload == error);
  CHECK(backend.log.empty());
}

TEST_CASE("Qbtrace:bts and Qbtrace:off switch tracing with gdb's error texts", "[btrace]") {
  Fixture f;
  CHECK(f.ask("Qbtrace:off") == "E.Branch tracing not enabled.");
  CHECK(f.ask("Qbtrace:bts") == "OK");
  CHECK(f.backend.enabled(100));
  CHECK(f.ask("Qbtrace:bts") == "E.Btrace already enabled.");
  CHECK(f.ask("Qbtrace:off") == "OK");
  CHECK_FALSE(f.backend.enabled(100));
  CHECK(f.backend.log == std::vector<std::string>{"enable 100", "disable 100"});
  CHECK(f.ask("Qbtrace:lbr") == "E.Bad Qbtrace operation.  Use bts, pt, or off.");
}

TEST_CASE("backend failures reach gdb as E. messages", "[btrace]") {
  Fixture f;
  f.backend.fail_next = "perf_event_open failed: Permission denied";
  CHECK(f.ask("Qbtrace:bts") == "E.perf_event_open failed: Permission denied");
  CHECK_FALSE(f.backend.enabled(100));
  CHECK(f.ask("Qbtrace:bts") == "OK");
  f.backend.fail_next = "cannot stop tracing";
  CHECK(f.ask("Qbtrace:off") == "E.cannot stop tracing");
}

TEST_CASE("Qbtrace:pt enables the same backend's trace, sized by Qbtrace-conf:pt:size", "[btrace]") {
  Fixture f;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t bts_size = f.backend.config().buffer_bytes;
  CHECK(f.ask("Qbtrace-conf:pt:size=0x4001") == "OK");
  CHECK(f.backend.config().buffer_bytes == bts_size);  // bts traces keep their size
  CHECK(f.ask("Qbtrace:pt") == "OK");
  CHECK(f.backend.enabled(100));
  // Rounded up to a power-of-two number of pages, as gdbserver's perf AUX
  // buffer is; it keeps a branch per 2 bytes (a bts buffer one per 24);
  // the backend's size for other threads is untouched.
  const uint64_t rounded = stub::session::bts_buffer_bytes(0x4001, page);
  CHECK(f.backend.thread_config(100)->buffer_bytes == rounded / 2 * 24);
  CHECK(f.backend.config().buffer_bytes == bts_size);
  char size[32];
  std::snprintf(size, sizeof size, "0x%llx", static_cast<unsigned long long>(rounded));
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") ==
        "l<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
        "<pt size=\"" + std::string(size) + "\"/>\n</btrace-conf>\n<!-- btstub backend: fake -->\n");
  CHECK(f.ask("Qbtrace:pt") == "E.Btrace already enabled.");
  CHECK(f.ask("Qbtrace:bts") == "E.Btrace already enabled.");
  CHECK(f.ask("Qbtrace:off") == "OK");
  CHECK_FALSE(f.backend.enabled(100));
  // Off, then bts: the same thread reads BTS documents again.
  CHECK(f.ask("Qbtrace:bts") == "OK");
  CHECK(contains(f.ask("qXfer:btrace-conf:read::0,fff"), "<bts size="));
}

TEST_CASE("Qbtrace:pt is refused where Qbtrace:bts is", "[btrace]") {
  Fixture f;
  f.backend.fail_next = "perf_event_open failed: Permission denied";
  CHECK(f.ask("Qbtrace:pt") == "E.perf_event_open failed: Permission denied");
  CHECK_FALSE(f.backend.enabled(100));
  f.session.trace_backend = nullptr;
  CHECK(f.ask("Qbtrace:pt") == "E.Target does not support branch tracing.");
  CHECK(f.ask("Qbtrace-conf:pt:size=0x4000") == "E.Target does not support branch tracing.");
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, nullptr};
  session.trace_backend = &backend;
  CHECK(session.handle_packet("Qbtrace:pt").payload == "E.Must select a single thread.");
}

TEST_CASE("btrace packets act on the general thread", "[btrace]") {
  Fixture f;
  f.process.threads_ = {100, 101};
  f.process.regs[101] = f.process.regs[100];
  f.ask("qSupported:multiprocess+");
  REQUIRE(f.ask("Hgp64.65") == "OK");
  CHECK(f.ask("Qbtrace:bts") == "OK");
  CHECK(f.backend.enabled(101));
  CHECK_FALSE(f.backend.enabled(100));
  CHECK(f.ask("qXfer:btrace:read:all:0,fff").front() == 'l');

  // Thread 100 was never enabled.
  REQUIRE(f.ask("Hgp64.64") == "OK");
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "E.Btrace not enabled.");
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") == "E.Btrace not enabled.");

  // The selected thread exits: gdbserver's answer.
  REQUIRE(f.ask("Hgp64.65") == "OK");
  f.process.threads_ = {100};
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "E.No such thread.");
  CHECK(f.ask("Qbtrace:off") == "E.No such thread.");
}

TEST_CASE("Qbtrace-conf sets the size new traces get; btrace-conf reports the thread's", "[btrace]") {
  Fixture f;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // A wish is rounded up to a power-of-two number of pages, as gdbserver's
  // perf buffer is: that is the buffer used and reported.
  CHECK(f.ask("Qbtrace-conf:bts:size=0x800") == "OK");
  CHECK(f.backend.config().buffer_bytes == page);
  CHECK(f.ask("Qbtrace-conf:pt:size=0x4000") == "OK");  // for pt traces only
  CHECK(f.backend.config().buffer_bytes == page);
  CHECK(f.session.btrace_reads.pt_size == 0x4000);
  CHECK(f.ask("Qbtrace-conf:bts:size=0x100000000") == "E.Bad size value.");
  CHECK(f.ask("Qbtrace-conf:lbr:size=0x10") == "E.Bad Qbtrace configuration option.");

  CHECK(f.ask("Qbtrace:bts") == "OK");
  char size[32];
  std::snprintf(size, sizeof size, "0x%llx", static_cast<unsigned long long>(page));
  const std::string conf_page =
      "l<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
      "<bts size=\"" + std::string(size) + "\" />\n</btrace-conf>\n<!-- btstub backend: fake -->\n";
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") == conf_page);
  // A later size applies to threads enabled later, not to this one.
  CHECK(f.ask("Qbtrace-conf:bts:size=0x10000") == "OK");
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") == conf_page);
  CHECK(f.ask("qXfer:btrace-conf:read:x:0,fff") == "E.Bad annex.");
}

TEST_CASE("a BTS buffer wish becomes a power-of-two number of pages", "[btrace]") {
  CHECK(stub::session::bts_buffer_bytes(0, 4096) == 4096);
  CHECK(stub::session::bts_buffer_bytes(1, 4096) == 4096);
  CHECK(stub::session::bts_buffer_bytes(4096, 4096) == 4096);
  CHECK(stub::session::bts_buffer_bytes(4097, 4096) == 8192);
  CHECK(stub::session::bts_buffer_bytes(3 * 4096, 4096) == 4 * 4096);
  CHECK(stub::session::bts_buffer_bytes(0x10000, 4096) == 0x10000);
  CHECK(stub::session::bts_buffer_bytes(0x10001, 4096) == 0x20000);
  // gdb's "unlimited" (0xffffffff) and beyond: the largest that gdb's
  // unsigned int holds.
  CHECK(stub::session::bts_buffer_bytes(0xffffffffu, 4096) == 0x80000000u);
  CHECK(stub::session::bts_buffer_bytes(uint64_t{1} << 40, 4096) == 0x80000000u);
}

TEST_CASE("all: the whole trace newest first, ending at the current pc", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  const std::string all = kHead + block(0x403000, 0x403008) + block(0x402000, 0x402010) +
                          block(0x401000, 0x401005) + kTail;
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "l" + all);
  // `all` does not depend on earlier reads.
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "l" + all);
  CHECK(f.ask("qXfer:btrace:read:everything:0,fff") == "E.Bad annex.");
}

TEST_CASE("all right after enabling: one block from where tracing began to the pc", "[btrace]") {
  Fixture f;
  REQUIRE(f.ask("Qbtrace:bts") == "OK");
  f.set_pc(100, 0x401004);
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "l" + kHead + block(0x401000, 0x401004) + kTail);
  // An unknown origin (0) is not sent: gdb cannot decode from address 0.
  f.backend.replace_trace(100, decoder::BlockTrace(0, 16));
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "l" + kHead + kTail);
}

TEST_CASE("delta: only what is new, the oldest block begins at 0x0", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  REQUIRE(f.ask("qXfer:btrace:read:all:0,fff").front() == 'l');

  // Nothing new: the partial block up to the pc, for gdb to stitch on.
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") == "l" + kHead + block(0, 0x403008) + kTail);

  // Two more branches, then the thread stands at 0x405002.
  f.backend.trace_of(100).append(0x403010, 0x404000);
  f.backend.trace_of(100).append(0x404020, 0x405000);
  f.set_pc(100, 0x405002);
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") ==
        "l" + kHead + block(0x405000, 0x405002) + block(0x404000, 0x404020) + block(0, 0x403010) + kTail);
  // Read again: nothing new any more.
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") == "l" + kHead + block(0, 0x405002) + kTail);
}

TEST_CASE("delta before any read covers everything since tracing began", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") ==
        "l" + kHead + block(0x403000, 0x403008) + block(0x402000, 0x402010) + block(0, 0x401005) + kTail);
}

TEST_CASE("new: the whole trace when it changed, nothing when it did not", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  const std::string all = kHead + block(0x403000, 0x403008) + block(0x402000, 0x402010) +
                          block(0x401000, 0x401005) + kTail;
  CHECK(f.ask("qXfer:btrace:read:new:0,fff") == "l" + all);
  CHECK(f.ask("qXfer:btrace:read:new:0,fff") == "l" + kHead + kTail);
  // A delta read also counts as a read.
  f.backend.trace_of(100).append(0x403010, 0x404000);
  f.set_pc(100, 0x404004);
  REQUIRE(f.ask("qXfer:btrace:read:delta:0,fff").front() == 'l');
  CHECK(f.ask("qXfer:btrace:read:new:0,fff") == "l" + kHead + kTail);
  f.backend.trace_of(100).append(0x404008, 0x405000);
  f.set_pc(100, 0x405000);
  CHECK(f.ask("qXfer:btrace:read:new:0,fff") ==
        "l" + kHead + block(0x405000, 0x405000) + block(0x404000, 0x404008) + block(0x403000, 0x403010) +
            block(0x402000, 0x402010) + block(0x401000, 0x401005) + kTail);
}

TEST_CASE("overflow between reads: delta fails, new recovers, delta works again", "[btrace]") {
  Fixture f;
  // Two BTS records: set on the backend, as a gdb wish would be rounded up
  // to a page.
  stub::tracing::TraceConfig two_records = f.backend.config();
  two_records.buffer_bytes = 0x30;
  f.backend.set_config(two_records);
  REQUIRE(f.ask("Qbtrace:bts") == "OK");
  auto& trace = f.backend.trace_of(100);
  REQUIRE(trace.capacity() == 2);
  trace.append(0x401005, 0x402000);
  f.set_pc(100, 0x402004);
  REQUIRE(f.ask("qXfer:btrace:read:all:0,fff") ==
          "l" + kHead + block(0x402000, 0x402004) + block(0x401000, 0x401005) + kTail);

  // Three branches since that read, two fit: the first one is lost.
  trace.append(0x402008, 0x403000);
  trace.append(0x403008, 0x404000);
  trace.append(0x404008, 0x405000);
  f.set_pc(100, 0x405004);
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") == "E.Overflow.");
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") == "E.Overflow.");  // a failed read moves nothing
  // gdb's fallback: new gives what the buffer holds; its oldest block begins
  // at the target of the newest dropped branch.
  CHECK(f.ask("qXfer:btrace:read:new:0,fff") ==
        "l" + kHead + block(0x405000, 0x405004) + block(0x404000, 0x404008) + block(0x403000, 0x403008) +
            kTail);
  trace.append(0x405008, 0x406000);
  f.set_pc(100, 0x406001);
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") ==
        "l" + kHead + block(0x406000, 0x406001) + block(0, 0x405008) + kTail);
}

TEST_CASE("a trace replaced since the last read counts as overflow", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  REQUIRE(f.ask("qXfer:btrace:read:all:0,fff").front() == 'l');
  f.backend.replace_trace(100, decoder::BlockTrace(0x500000, 16));
  f.set_pc(100, 0x500004);
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") == "E.Overflow.");
  CHECK(f.ask("qXfer:btrace:read:new:0,fff") == "l" + kHead + block(0x500000, 0x500004) + kTail);
}

TEST_CASE("re-enabling starts the read position afresh", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  REQUIRE(f.ask("qXfer:btrace:read:all:0,fff").front() == 'l');
  REQUIRE(f.ask("Qbtrace:off") == "OK");
  REQUIRE(f.ask("Qbtrace:bts") == "OK");
  f.backend.trace_of(100).append(0x403010, 0x404000);
  f.set_pc(100, 0x404002);
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") ==
        "l" + kHead + block(0x404000, 0x404002) + block(0, 0x403010) + kTail);
}

TEST_CASE("btrace documents are read in chunks from one snapshot", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  const std::string delta = kHead + block(0x403000, 0x403008) + block(0x402000, 0x402010) +
                            block(0, 0x401005) + kTail;
  REQUIRE(delta.size() > 0x40);
  CHECK(f.ask("qXfer:btrace:read:delta:0,40") == "m" + delta.substr(0, 0x40));
  // The thread moves on between chunks: the document gdb is reading does not.
  f.backend.trace_of(100).append(0x403010, 0x404000);
  f.set_pc(100, 0x404004);
  CHECK(f.ask("qXfer:btrace:read:delta:40,40") == "m" + delta.substr(0x40, 0x40));
  std::string rest;
  for (uint64_t off = 0x80; off < delta.size(); off += 0x40) {
    char packet[64];
    std::snprintf(packet, sizeof packet, "qXfer:btrace:read:delta:%llx,40", static_cast<unsigned long long>(off));
    std::string reply = f.ask(packet);
    REQUIRE((reply.front() == 'm' || reply.front() == 'l'));
    rest += reply.substr(1);
  }
  CHECK(rest == delta.substr(0x80));
  CHECK(f.ask("qXfer:btrace:read:delta:fff,40") == "E.Bad offset; read the branch trace from offset 0 first.");
  // The next read from offset 0 starts where the chunked one ended.
  CHECK(f.ask("qXfer:btrace:read:delta:0,fff") ==
        "l" + kHead + block(0x404000, 0x404004) + block(0, 0x403010) + kTail);
}

TEST_CASE("a chunk of another document needs that document read from offset 0", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  CHECK(f.ask("qXfer:btrace:read:all:10,40") == "E.Bad offset; read the branch trace from offset 0 first.");
  REQUIRE(f.ask("qXfer:btrace:read:all:0,10").front() == 'm');
  CHECK(f.ask("qXfer:btrace:read:new:10,40") == "E.Bad offset; read the branch trace from offset 0 first.");
  CHECK(f.ask("qXfer:btrace-conf:read::10,40") == "E.Bad offset; read the branch trace from offset 0 first.");
  CHECK(f.ask("qXfer:btrace:read:all:10,40").front() == 'm');
}

TEST_CASE("unreadable registers make the trace read fail, not crash", "[btrace]") {
  Fixture f;
  f.trace_two_branches();
  f.process.regs.erase(100);
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "E.no such thread");
}

TEST_CASE("whole-program recording is not reported to gdb as its own record btrace", "[btrace]") {
  // gdb reads btrace-conf for every thread on connecting and starts its
  // own replay target for any thread that has one; under --record it must
  // not, or it would never send bs/bc.
  Fixture f;
  REQUIRE(f.backend.enable_all().ok());
  CHECK(f.ask("qXfer:btrace-conf:read::0,fff") == "E.Btrace not enabled.");
  CHECK(f.ask("qXfer:btrace:read:all:0,fff") == "E.Btrace not enabled.");
  CHECK(f.ask("Qbtrace:off") == "E.Branch tracing not enabled.");
  // An explicit record btrace adopts the running trace...
  REQUIRE(f.ask("Qbtrace:bts") == "OK");
  CHECK(f.ask("Qbtrace:bts") == "E.Btrace already enabled.");
  CHECK(contains(f.ask("qXfer:btrace-conf:read::0,fff"), "<bts size="));
  // ... and record stop leaves the whole-program trace running.
  REQUIRE(f.ask("Qbtrace:off") == "OK");
  CHECK(f.backend.enabled(100));
}

TEST_CASE("a new session takes over the last stop's thread and the recording threads", "[btrace]") {
  Fixture f;
  f.process.threads_ = {100, 101};
  REQUIRE(f.ask("Hgp64.65") == "OK");
  REQUIRE(f.ask("Qbtrace:bts") == "OK");
  stub::process::ProcessEvent stop;  // thread 101 reported the last stop
  stop.tid = 101;
  stop.signal = SIGTRAP;
  f.session.last_stop = f.session.make_stop_reply(stop);
  f.session.mark_running();
  CHECK_FALSE(f.session.handover().has_value());  // a running program is not kept
  REQUIRE(f.session.on_process_event(stop).has_value());
  auto handover = f.session.handover();
  REQUIRE(handover.has_value());

  // The next client's session over the same program.
  stub::session::Session next(stub::session::SessionConfig{}, &f.process);
  next.trace_backend = &f.backend;
  next.take_over(*handover);
  CHECK(next.current_thread() == 101);
  auto reply = next.handle_packet("?").payload.value_or("");
  CHECK(reply.rfind("T05", 0) == 0);
  CHECK(reply.find("thread:65;") != std::string::npos);
  // gdb asks each thread's btrace-conf on connect: 101 still records.
  REQUIRE(next.handle_packet("Hg65").payload == "OK");
  CHECK(next.handle_packet("qXfer:btrace-conf:read::0,fff").payload.value_or("").find("<bts size=") !=
        std::string::npos);
  REQUIRE(next.handle_packet("Hg64").payload == "OK");
  CHECK(next.handle_packet("qXfer:btrace-conf:read::0,fff").payload == "E.Btrace not enabled.");
}

}  // namespace test_btrace_session
