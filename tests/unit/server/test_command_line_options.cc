// Command-line options of btstub's own (stub/server/options.h): branch tracing, busy poll.
#include <catch2/catch.hpp>

#include "stub/server/options.h"

namespace test_command_line_options {  // this file's own names, apart in a unity build

using stub::server::CommandLine;
using stub::server::parse_command_line;
using stub::tracing::TraceBackendChoice;

namespace {

CommandLine parse_ok(std::vector<std::string> args) {
  auto cl = parse_command_line(args);
  INFO((cl ? std::string() : cl.error().message));
  REQUIRE(cl.ok());
  return *cl;
}

std::string parse_error(std::vector<std::string> args) {
  auto cl = parse_command_line(args);
  REQUIRE_FALSE(cl.ok());
  return cl.error().message;
}

}  // namespace

TEST_CASE("tracing options default to off, auto, 64k, drop") {
  auto cl = parse_ok({":0", "prog"});
  REQUIRE_FALSE(cl.record);
  REQUIRE(cl.trace_backend == TraceBackendChoice::Auto);
  REQUIRE(cl.trace_config.buffer_bytes == 64 * 1024);
  REQUIRE(cl.trace_config.overflow == decoder::OverflowPolicy::DropOldest);
}

TEST_CASE("--record, --backend, --trace-size and --trace-full are parsed") {
  auto cl = parse_ok({"--record", "--backend=software", "--trace-size=1m", "--trace-full=stop", ":0", "prog", "--record"});
  REQUIRE(cl.record);
  REQUIRE(cl.trace_backend == TraceBackendChoice::Software);
  REQUIRE(cl.trace_config.buffer_bytes == 1024 * 1024);
  REQUIRE(cl.trace_config.overflow == decoder::OverflowPolicy::Stop);
  // Options after PROG belong to the program.
  REQUIRE(cl.program == std::vector<std::string>{"prog", "--record"});
  REQUIRE(parse_ok({"--backend=auto", "--trace-full=drop", ":0", "prog"}).trace_config.overflow ==
          decoder::OverflowPolicy::DropOldest);
  // Options may also follow COMM, as gdbserver allows.
  REQUIRE(parse_ok({":0", "--record", "prog"}).record);
}

TEST_CASE("--trace-size accepts bytes, hex and k/m suffixes within limits") {
  REQUIRE(*stub::server::parse_trace_size("24") == 24);
  REQUIRE(*stub::server::parse_trace_size("0x1000") == 4096);
  REQUIRE(*stub::server::parse_trace_size("64k") == 65536);
  REQUIRE(*stub::server::parse_trace_size("2M") == 2 * 1024 * 1024);
  REQUIRE(*stub::server::parse_trace_size("4096m") == stub::server::kMaxTraceSize);
  for (const char* bad : {"", "k", "12x", "-1", "0x", "23", "4097m", "99999999999999999999"}) {
    INFO(bad);
    REQUIRE_FALSE(stub::server::parse_trace_size(bad).ok());
  }
  REQUIRE(stub::server::parse_trace_size("23").error().message.find("at least 24") != std::string::npos);
}

TEST_CASE("--trace-stops picks the translating tracer by default") {
  REQUIRE(parse_ok({":0", "prog"}).trace_stops == stub::server::TraceStopChoice::Translate);
  REQUIRE_FALSE(parse_ok({":0", "prog"}).trace_stops_given);
  REQUIRE(parse_ok({"--trace-stops=int3", ":0", "prog"}).trace_stops == stub::server::TraceStopChoice::Int3);
  REQUIRE(parse_ok({"--trace-stops=int3", ":0", "prog"}).trace_stops_given);
  REQUIRE(parse_ok({"--trace-stops=debugreg", ":0", "prog"}).trace_stops ==
          stub::server::TraceStopChoice::DebugRegister);
  REQUIRE(parse_ok({"--trace-stops=step", ":0", "prog"}).trace_stops == stub::server::TraceStopChoice::SingleStep);
  REQUIRE(parse_ok({"--trace-stops=step", "--trace-stops=int3", ":0", "prog"}).trace_stops ==
          stub::server::TraceStopChoice::Int3);
  REQUIRE(parse_ok({"--trace-stops=translate", ":0", "prog"}).trace_stops ==
          stub::server::TraceStopChoice::Translate);
  REQUIRE(parse_error({"--trace-stops=dr", ":0", "prog"}) ==
          "Bad --trace-stops 'dr': expected int3, debugreg, step or translate");
  REQUIRE(stub::server::usage_text().find("--trace-stops=int3|debugreg|step|translate") != std::string::npos);
}

TEST_CASE("--checkpoint-every takes a number of branches") {
  REQUIRE(parse_ok({":0", "prog"}).checkpoint_spacing() == 4000000);  // translated code, the default
  REQUIRE(parse_ok({":0", "prog"}).checkpoint_fill_in() == 100000);     // ... filled in while idle
  REQUIRE(parse_ok({"--trace-stops=int3", ":0", "prog"}).checkpoint_spacing() == 700);
  REQUIRE(parse_ok({"--trace-stops=int3", ":0", "prog"}).checkpoint_fill_in() == 0);
  REQUIRE(parse_ok({"--checkpoint-every=50000", ":0", "prog"}).checkpoint_spacing() == 50000);
  REQUIRE(parse_ok({"--checkpoint-every=50000", ":0", "prog"}).checkpoint_fill_in() == 0);  // the user's, fixed
  REQUIRE(parse_ok({"--checkpoint-every=1", "--trace-stops=int3", ":0", "prog"}).checkpoint_spacing() == 1);
  for (const char* bad : {"0", "-5", "", "1k", "0x10", "1000000001", "99999999999999999999"}) {
    INFO(bad);
    REQUIRE(parse_error({std::string("--checkpoint-every=") + bad, ":0", "prog"}) ==
            "Bad --checkpoint-every '" + std::string(bad) + "': expected a number of branches from 1 to 1000000000");
  }
  REQUIRE(stub::server::usage_text().find("--checkpoint-every=BRANCHES") != std::string::npos);
}

TEST_CASE("bad tracing option values are clear errors") {
  REQUIRE(parse_error({"--backend=bts", ":0", "prog"}) == "Bad --backend 'bts': expected auto, software, perf-bts, intel-bts or intel-pt");
  REQUIRE(parse_error({"--trace-full=wrap", ":0", "prog"}) == "Bad --trace-full 'wrap': expected drop or stop");
  REQUIRE(parse_error({"--trace-size=lots", ":0", "prog"}).find("Bad --trace-size 'lots'") == 0);
}

TEST_CASE("--help describes the tracing options") {
  const std::string help = stub::server::usage_text();
  for (const char* option : {"--record", "--backend=auto|software", "--trace-size=BYTES", "--trace-full=drop|stop"}) {
    INFO(option);
    REQUIRE(help.find(option) != std::string::npos);
  }
}

TEST_CASE("--busy-poll takes microseconds, 0 turns it off") {
  REQUIRE(parse_ok({":0", "prog"}).busy_poll_us == stub::server::kDefaultBusyPollMicroseconds);
  REQUIRE(parse_ok({"--busy-poll=0", ":0", "prog"}).busy_poll_us == 0);
  REQUIRE(parse_ok({"--busy-poll=2000", ":0", "prog"}).busy_poll_us == 2000);
  REQUIRE(parse_ok({"--busy-poll=100000", ":0", "prog"}).busy_poll_us == stub::server::kMaxBusyPollMicroseconds);
  for (const char* bad : {"--busy-poll=", "--busy-poll=-1", "--busy-poll=100001", "--busy-poll=fast",
                          "--busy-poll=99999999999999999999"}) {
    INFO(bad);
    REQUIRE(parse_error({bad, ":0", "prog"}).find("Bad --busy-poll=") == 0);
  }
  REQUIRE(stub::server::usage_text().find("--busy-poll=USEC") != std::string::npos);
}

TEST_CASE("--replay-progress takes seconds, 0 reports at every turn") {
  REQUIRE(parse_ok({":0", "prog"}).replay_progress_seconds == stub::server::kDefaultReplayProgressSeconds);
  REQUIRE(parse_ok({"--replay-progress=0", ":0", "prog"}).replay_progress_seconds == 0);
  REQUIRE(parse_ok({"--replay-progress=3600", ":0", "prog"}).replay_progress_seconds == 3600);
  for (const char* bad : {"--replay-progress=", "--replay-progress=-1", "--replay-progress=3601",
                          "--replay-progress=soon"}) {
    INFO(bad);
    REQUIRE(parse_error({bad, ":0", "prog"}).find("Bad --replay-progress=") == 0);
  }
  REQUIRE(stub::server::usage_text().find("--replay-progress=SECONDS") != std::string::npos);
}

TEST_CASE("--selftest is answered as by a gdbserver built without self tests") {
  REQUIRE(parse_ok({"--selftest"}).mode == stub::server::CommandLine::Mode::Selftest);
  REQUIRE(parse_ok({"--selftest=foo"}).mode == stub::server::CommandLine::Mode::Selftest);
  REQUIRE(stub::server::usage_text().find("--selftest") != std::string::npos);
}

}  // namespace test_command_line_options
