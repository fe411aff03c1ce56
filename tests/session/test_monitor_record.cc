// `monitor record start|stop|status` against FakeProcess, with the real
// SoftwareTracer as the session's trace backend.
#include <catch2/catch.hpp>

#include "fake_process.h"
#include "fake_trace_backend.h"
#include "protocol/replies.h"
#include "stub/session/session.h"
#include "stub/tracing/software_tracer.h"

namespace test_monitor_record {  // this file's own names, apart in a unity build

namespace {

struct Fixture {
  test::FakeProcess process;
  std::unique_ptr<stub::tracing::SoftwareTracer> tracer = stub::tracing::SoftwareTracer::create().value();
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  Fixture() { session.trace_backend = tracer.get(); }
  stub::session::Reply monitor(std::string_view command) {
    return session.handle_packet("qRcmd," + protocol::hex_encode(command));
  }
};

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("monitor record start and stop switch whole-program recording", "[session][monitor]") {
  Fixture f;
  // Nothing to stop yet: said so, not "stopped".
  auto idle = f.monitor("record stop");
  CHECK(contains(idle.console, "Nothing is being recorded."));
  CHECK(idle.payload == std::optional<std::string>("E01"));
  auto start = f.monitor("record start");
  CHECK(start.payload == std::optional<std::string>("OK"));
  CHECK(contains(start.console, "every thread"));
  CHECK(contains(start.console, "software backend"));
  CHECK(contains(start.console, "65536-byte buffers (2730 branches), drop the oldest when full"));
  CHECK(f.tracer->all_enabled());
  CHECK(f.tracer->traces(100));
  auto status = f.monitor("record status");
  CHECK(contains(status.console, "every thread"));
  CHECK(contains(status.console, "thread 100: recording from its next resume"));
  auto stop = f.monitor("record stop");
  CHECK(contains(stop.console, "stopped"));
  CHECK_FALSE(f.tracer->all_enabled());
  CHECK_FALSE(f.tracer->traces(100));
  CHECK(contains(f.monitor("record status").console, "thread 100: not recording"));
}

TEST_CASE("monitor record start with a size sets the bound of every trace", "[session][monitor]") {
  Fixture f;
  auto bad = f.monitor("record start lots");
  CHECK(contains(bad.console, "Bad size 'lots': expected a number of bytes"));
  CHECK(bad.payload == std::optional<std::string>("E01"));
  CHECK_FALSE(f.tracer->all_enabled());
  auto start = f.monitor("record start 1m");
  CHECK(contains(start.console, "1048576-byte buffers (43690 branches)"));
  CHECK(f.tracer->all_enabled());
  CHECK(f.tracer->config().buffer_bytes == 1048576);
  // Started already: a new size still applies, as `record size` does.
  CHECK(contains(f.monitor("record start 2m").console, "2097152-byte buffers (87381 branches)"));
}

TEST_CASE("monitor record status counts a thread's branches", "[session][monitor]") {
  Fixture f;
  stub::tracing::TraceConfig config;
  config.buffer_bytes = 48;
  config.overflow = decoder::OverflowPolicy::Stop;
  f.tracer->set_config(config);
  REQUIRE(f.tracer->enable(100).ok());
  auto status = f.monitor("record status");
  CHECK(contains(status.console, "per thread"));
  CHECK(contains(status.console, "48-byte buffers (2 branches), stop the program when full"));
  CHECK(contains(status.console, "thread 100: 0 of 2 branches in 0 bytes"));
  CHECK(contains(status.console, "a thread's trace holds at most 1073741824 bytes"));
  // The tracer's counters, which benchmarks read (tests/bench/real_programs_bench.py).
  CHECK(contains(status.console, "Ptrace tracer: 0 stops of traced threads (0 at trace stops, 0 absorbed), 0 single "
                                 "steps of its own, 0 transfers emulated, 0 run past without a stop; 0 branches stored.\n"));
}

TEST_CASE("monitor record without a backend or with a bad argument explains itself", "[session][monitor]") {
  Fixture f;
  auto frob = f.monitor("record frob");
  CHECK(contains(frob.console, "Usage: monitor record start [BYTES]|stop|status"));
  CHECK(frob.payload == std::optional<std::string>("E01"));  // gdb: "Protocol error with Rcmd"
  CHECK(contains(f.monitor("help").console, "record"));
  CHECK(f.monitor("record status").payload == std::optional<std::string>("OK"));
  f.session.trace_backend = nullptr;
  auto none = f.monitor("record start");
  CHECK(none.payload == std::optional<std::string>("E01"));
  CHECK(contains(none.console, "not available"));
}

TEST_CASE("monitor record status names a backend's last failure to trace a thread", "[session][monitor]") {
  test::FakeProcess process;
  test::FakeTraceBackend backend;
  stub::session::Session session{stub::session::SessionConfig{}, &process};
  session.trace_backend = &backend;
  auto status = [&] { return session.handle_packet("qRcmd," + protocol::hex_encode("record status")).console; };
  CHECK_FALSE(contains(status(), "Last failure"));
  backend.problem_text = "perf-bts: thread 101: perf_event_open failed: Too many open files";
  CHECK(contains(status(), "Last failure: perf-bts: thread 101: perf_event_open failed: Too many open files\n"));
}

TEST_CASE("catching system calls and recording exclude each other, with a reason", "[session][monitor]") {
  Fixture f;
  CHECK(f.session.handle_packet("QCatchSyscalls:1;27").payload == std::optional<std::string>("OK"));
  auto refused = f.monitor("record start");
  CHECK(contains(refused.console, "Cannot record while catching system calls"));
  CHECK_FALSE(f.tracer->all_enabled());
  CHECK(f.session.handle_packet("QCatchSyscalls:0").payload == std::optional<std::string>("OK"));
  CHECK(f.monitor("record start").payload == std::optional<std::string>("OK"));
  auto catching = f.session.handle_packet("QCatchSyscalls:1");
  REQUIRE(catching.payload.has_value());
  CHECK(contains(*catching.payload, "E.Cannot catch system calls while recording"));
  CHECK(f.process.log.back() == "catch syscalls off");
}

TEST_CASE("a thread gdb's record btrace traces is recording, for catch syscall and monitor record stop", "[session][monitor]") {
  Fixture f;
  REQUIRE(f.session.handle_packet("Qbtrace:bts").payload == std::optional<std::string>("OK"));
  REQUIRE_FALSE(f.tracer->all_enabled());
  REQUIRE(f.tracer->enabled(100));
  auto catching = f.session.handle_packet("QCatchSyscalls:1");
  REQUIRE(catching.payload.has_value());
  CHECK(contains(*catching.payload, "E.Cannot catch system calls while recording"));
  auto stop = f.monitor("record stop");
  CHECK(contains(stop.console, "stopped"));
  CHECK_FALSE(f.tracer->enabled(100));
  CHECK(f.session.handle_packet("QCatchSyscalls:1").payload == std::optional<std::string>("OK"));
}

TEST_CASE("monitor record start and stop before there is a program", "[session][monitor]") {
  std::unique_ptr<stub::tracing::SoftwareTracer> tracer = stub::tracing::SoftwareTracer::create().value();
  stub::session::Session session{stub::session::SessionConfig{}, nullptr};
  session.trace_backend = tracer.get();
  auto monitor = [&](std::string_view command) { return session.handle_packet("qRcmd," + protocol::hex_encode(command)); };
  CHECK(contains(monitor("record stop").console, "Nothing is being recorded."));
  CHECK(monitor("record start").payload == std::optional<std::string>("OK"));
  CHECK(tracer->all_enabled());
  auto stop = monitor("record stop");
  CHECK(contains(stop.console, "stopped"));
  CHECK_FALSE(tracer->all_enabled());
}

}  // namespace test_monitor_record
