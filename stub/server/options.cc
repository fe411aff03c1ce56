#include "stub/server/options.h"

#include <charconv>
#include <sstream>

namespace stub::server {

namespace {

using btstub::ErrorCode;
using btstub::make_error;

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// A billion branches: beyond, a re-run could take hours.
constexpr long kMaxCheckpointEvery = 1000000000;

std::optional<long> parse_number(const std::string& text) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// gdbserver's names (server.cc): T and Tthread are stop-reply forms (see
// Session::stop_reply_payload), qfThreadInfo goes with qsThreadInfo, and
// threads is all of vCont, Tthread, qC and the thread list. Any other name
// is a packet answered as unsupported.
void add_disabled_packets(CommandLine& cl, const std::string& list) {
  std::istringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    if (name == "threads") {
      cl.disabled_packets.insert({"vCont", "Tthread", "qC", "qfThreadInfo", "qsThreadInfo"});
      continue;
    }
    cl.disabled_packets.insert(name);
    if (name == "qfThreadInfo") cl.disabled_packets.insert("qsThreadInfo");
  }
}

btstub::Expected<void> parse_trace_option(CommandLine& cl, const std::string& a) {
  auto value = a.substr(a.find('=') + 1);
  if (starts_with(a, "--backend=")) {
    if (value == "auto") cl.trace_backend = TraceBackendChoice::Auto;
    else if (value == "software") cl.trace_backend = TraceBackendChoice::Software;
    else if (value == "perf-bts") cl.trace_backend = TraceBackendChoice::PerfBts;
    else if (value == "intel-bts") cl.trace_backend = TraceBackendChoice::IntelBts;
    else if (value == "intel-pt") cl.trace_backend = TraceBackendChoice::IntelPt;
    else return make_error(ErrorCode::InvalidArgument,
                           "Bad --backend '" + value + "': expected auto, software, perf-bts, intel-bts or intel-pt");
  } else if (starts_with(a, "--trace-size=")) {
    auto size = parse_trace_size(value);
    if (!size) return size.error();
    cl.trace_config.buffer_bytes = *size;
    cl.trace_size_given = true;
  } else if (starts_with(a, "--trace-stops=")) {
    cl.trace_stops_given = true;
    if (value == "int3") cl.trace_stops = TraceStopChoice::Int3;
    else if (value == "debugreg") cl.trace_stops = TraceStopChoice::DebugRegister;
    else if (value == "step") cl.trace_stops = TraceStopChoice::SingleStep;
    else if (value == "translate") cl.trace_stops = TraceStopChoice::Translate;
    else return make_error(ErrorCode::InvalidArgument,
                           "Bad --trace-stops '" + value + "': expected int3, debugreg, step or translate");
  } else if (starts_with(a, "--checkpoint-memory=")) {
    auto size = value == "0" ? btstub::Expected<uint64_t>(uint64_t{0}) : tracing::parse_trace_size(value);
    if (!size) {
      return make_error(ErrorCode::InvalidArgument, "Bad --checkpoint-memory '" + value + "': " + size.error().message);
    }
    cl.checkpoint_memory = *size;
  } else if (starts_with(a, "--checkpoint-every=")) {
    auto every = parse_number(value);
    if (!every || *every < 1 || *every > kMaxCheckpointEvery) {
      return make_error(ErrorCode::InvalidArgument, "Bad --checkpoint-every '" + value +
                                                        "': expected a number of branches from 1 to " +
                                                        std::to_string(kMaxCheckpointEvery));
    }
    cl.checkpoint_every = static_cast<uint64_t>(*every);
  } else if (starts_with(a, "--trace-full=")) {
    if (value == "drop") cl.trace_config.overflow = decoder::OverflowPolicy::DropOldest;
    else if (value == "stop") cl.trace_config.overflow = decoder::OverflowPolicy::Stop;
    else return make_error(ErrorCode::InvalidArgument, "Bad --trace-full '" + value + "': expected drop or stop");
  }
  return {};
}

bool is_trace_option(const std::string& a) {
  return starts_with(a, "--backend=") || starts_with(a, "--trace-size=") || starts_with(a, "--trace-full=") ||
         starts_with(a, "--trace-stops=") || starts_with(a, "--checkpoint-memory=") ||
         starts_with(a, "--checkpoint-every=");
}

}  // namespace

btstub::Expected<uint64_t> parse_trace_size(const std::string& text) {
  auto size = tracing::parse_trace_size(text);
  if (!size) return make_error(ErrorCode::InvalidArgument, "Bad --trace-size '" + text + "': " + size.error().message);
  return size;
}

std::string usage_text() {
  return "Usage:\tbtstub [OPTIONS] COMM PROG [ARGS ...]\n"
         "\tbtstub [OPTIONS] --attach COMM PID\n"
         "\tbtstub [OPTIONS] --multi COMM\n"
         "\n"
         "COMM is HOST:PORT to listen for a TCP connection (HOST defaults to\n"
         "127.0.0.1), or '-' or 'stdio' to use stdin/stdout of btstub.\n"
         "\n"
         "Options:\n"
         "  --help                Print this message and exit.\n"
         "  --version             Display version information and exit.\n"
         "  --selftest            As gdbserver's: btstub has no built-in self tests (its\n"
         "                        tests are the project's ctest suite); says so.\n"
         "  --once                Exit after the first connection has closed.\n"
         "  --attach              Attach to the process PID.\n"
         "  --multi               Start without a program (extended-remote).\n"
         "  --wrapper WRAPPER --  Run WRAPPER to start new programs.\n"
         "  --disable-randomization\n"
         "                        Run PROG with address space randomization disabled (default).\n"
         "  --no-disable-randomization\n"
         "                        Don't disable address space randomization when starting PROG.\n"
         "  --disable-packet=PKT1[,PKT2,...]\n"
         "                        Answer these packets as unsupported (e.g. vCont,qC),\n"
         "                        as gdbserver: T: stop replies as S; Tthread: stop\n"
         "                        replies without the thread; threads: vCont, Tthread,\n"
         "                        qC and qfThreadInfo.\n"
         "  --remote-debug        Log every packet on stderr.\n"
         "  --no-pin-cpu          Let btstub and PROG run on any CPU (default: both on\n"
         "                        the CPU that was idle longest when btstub started;\n"
         "                        ptrace stops cost far less when tracer and program\n"
         "                        share a CPU).\n"
         "  --busy-poll=USEC      After a reply that leaves PROG stopped, poll for the\n"
         "                        client's next packet for up to USEC microseconds\n"
         "                        before sleeping (default 500; 0: never). Each wake-up\n"
         "                        from sleep costs tens of µs in a VM.\n"
         "  --replay-progress=SECONDS\n"
         "                        While a reverse or forward continue searches a long\n"
         "                        history, tell the client how far it has come every\n"
         "                        SECONDS (default 2; 0: every 65,536 branches).\n"
         "  --no-step-ahead       Do not run PROG's next single step while the client is\n"
         "                        still busy with the last one (default: run it, and\n"
         "                        undo it if the client asks for something else).\n"
         "  --no-vfile            Refuse vFile packets: the client cannot read, write or\n"
         "                        delete files with btstub's rights (see docs/security.md).\n"
         "  --no-run              Refuse vRun, vAttach and R: the client cannot start or\n"
         "                        attach to any other program.\n"
         "  --startup-with-shell, --no-startup-with-shell\n"
         "                        Start PROG through $SHELL (else /bin/sh) as `exec PROG ARGS`,\n"
         "                        as gdbserver does (the default), or exec it directly.\n"
         "\n"
         "Branch tracing:\n"
         "  --record              Trace the branches of every thread from PROG's first\n"
         "                        instruction (as `monitor record start` at once).\n"
         "  --backend=auto|software|perf-bts|intel-bts|intel-pt\n"
         "                        Branch-trace backend (default auto: intel-pt, else\n"
         "                        intel-bts, else perf-bts, else software; see --probe).\n"
         "  --probe               Print what branch-trace hardware this machine has\n"
         "                        and which backend auto picks, then exit.\n"
         "  --trace-size=BYTES    Trace buffer per thread, in bytes as a BTS buffer (24\n"
         "                        per branch; k/m suffixes, 0x hex). A bound: the\n"
         "                        software tracer stores a few bytes a branch, as they\n"
         "                        come. Default 256m (11 million branches) for the\n"
         "                        software tracer, 64k for hardware backends.\n"
         "  --trace-full=drop|stop\n"
         "                        When a buffer is full: drop the oldest branches\n"
         "                        (default) or stop the program and report it.\n"
         "  --trace-stops=int3|debugreg|step|translate\n"
         "                        How the software tracer sees a thread's branches.\n"
         "                        translate (default): translated code in a cache in\n"
         "                        PROG logs them and stops only at what it cannot run,\n"
         "                        int3s for the rest (docs/backends.md); int3: int3s at\n"
         "                        block ends, whose transfers it emulates and looks\n"
         "                        past; debugreg: a debug register (one stop per\n"
         "                        block, where they trap; leaves Z1-Z4 three); step: a\n"
         "                        single step per instruction.\n"
         "  --checkpoint-memory=BYTES\n"
         "                        Memory for the copies of the program that give\n"
         "                        registers and memory in the recorded past (k/m\n"
         "                        suffixes, at most 4096m; default 1024m; 0: none, the\n"
         "                        past then shows only where the program was).\n"
         "  --checkpoint-every=BRANCHES\n"
         "                        Branches between two copies taken where nothing\n"
         "                        else takes one (default 4000000 with\n"
         "                        --trace-stops=translate, filled in to 100000\n"
         "                        while the client is idle; 700 with the others;\n"
         "                        growing to 1/512 of the thread's history; given,\n"
         "                        it stays fixed and nothing is filled in).\n"
         "                        More: faster recording (each copy is a fork of\n"
         "                        PROG), slower first steps back (a re-run goes from\n"
         "                        the nearest copy; see docs/past-state.md).\n";
}

btstub::Expected<CommandLine> parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  bool attach = false;
  bool multi = false;
  std::vector<std::string> positional;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!positional.empty() && !starts_with(a, "--")) {
      break;  // the program and its arguments start here
    }
    if (a == "--help") {
      cl.mode = CommandLine::Mode::Help;
      return cl;
    } else if (a == "--version") {
      cl.mode = CommandLine::Mode::Version;
      return cl;
    } else if (a == "--probe") {
      cl.mode = CommandLine::Mode::Probe;
      return cl;
    } else if (a == "--selftest" || starts_with(a, "--selftest=")) {
      cl.mode = CommandLine::Mode::Selftest;
      return cl;
    } else if (a == "--once") {
      cl.once = true;
    } else if (a == "--attach") {
      attach = true;
    } else if (a == "--multi") {
      multi = true;
    } else if (a == "--no-disable-randomization") {
      cl.disable_randomization = false;
    } else if (a == "--disable-randomization") {
      cl.disable_randomization = true;
    } else if (a == "--no-pin-cpu") {
      cl.pin_cpu = false;
    } else if (a == "--no-step-ahead") {
      cl.step_ahead = false;
    } else if (starts_with(a, "--busy-poll=")) {
      auto us = parse_number(a.substr(std::string_view("--busy-poll=").size()));
      if (!us || *us < 0 || *us > kMaxBusyPollMicroseconds) {
        return make_error(ErrorCode::InvalidArgument,
                          "Bad " + a + ": expected microseconds from 0 to " +
                              std::to_string(kMaxBusyPollMicroseconds));
      }
      cl.busy_poll_us = static_cast<unsigned>(*us);
    } else if (starts_with(a, "--replay-progress=")) {
      auto seconds = parse_number(a.substr(std::string_view("--replay-progress=").size()));
      if (!seconds || *seconds < 0 || *seconds > kMaxReplayProgressSeconds) {
        return make_error(ErrorCode::InvalidArgument,
                          "Bad " + a + ": expected seconds from 0 to " + std::to_string(kMaxReplayProgressSeconds));
      }
      cl.replay_progress_seconds = static_cast<unsigned>(*seconds);
    } else if (a == "--record") {
      cl.record = true;

    } else if (a == "--no-vfile") {
      cl.no_vfile = true;
    } else if (a == "--no-run") {
      cl.no_run = true;
    } else if (is_trace_option(a)) {
      if (auto r = parse_trace_option(cl, a); !r) return r.error();
    } else if (a == "--remote-debug" || a == "--debug") {
      cl.remote_debug = true;
    } else if (a == "--startup-with-shell" || a == "--no-startup-with-shell") {
      cl.startup_with_shell = a == "--startup-with-shell";
    } else if (starts_with(a, "--debug-format=")) {
      // accepted for compatibility
    } else if (starts_with(a, "--disable-packet=")) {
      add_disabled_packets(cl, a.substr(std::string_view("--disable-packet=").size()));
    } else if (a == "--wrapper") {
      std::size_t j = i + 1;
      while (j < args.size() && args[j] != "--") cl.wrapper.push_back(args[j++]);
      if (j == args.size() || cl.wrapper.empty()) {
        return make_error(ErrorCode::InvalidArgument, "--wrapper needs a command ending with --");
      }
      i = j;
    } else if (a == "--") {
      ++i;
      break;
    } else if (starts_with(a, "--")) {
      return make_error(ErrorCode::InvalidArgument, "Unknown argument: " + a);
    } else {
      positional.push_back(a);  // COMM
    }
  }
  if (positional.empty()) {
    if (i < args.size()) positional.push_back(args[i++]);
    else return make_error(ErrorCode::InvalidArgument, "Missing COMM argument");
  }
  cl.comm = positional.front();
  std::vector<std::string> rest(args.begin() + static_cast<long>(i), args.end());

  if (attach && multi) return make_error(ErrorCode::InvalidArgument, "--attach and --multi cannot be used together");
  if (attach) {
    cl.mode = CommandLine::Mode::Attach;
    if (rest.size() != 1) return make_error(ErrorCode::InvalidArgument, "--attach needs exactly one PID");
    auto pid = parse_number(rest[0]);
    if (!pid || *pid <= 0 || *pid > 0x3fffffff) {
      return make_error(ErrorCode::InvalidArgument, "Invalid PID: " + rest[0]);
    }
    cl.attach_pid = static_cast<int>(*pid);
  } else if (multi) {
    cl.mode = CommandLine::Mode::Multi;
    cl.program = rest;
  } else {
    cl.mode = CommandLine::Mode::Launch;
    if (rest.empty()) return make_error(ErrorCode::InvalidArgument, "No program specified");
    cl.program = rest;
  }
  if (!cl.stdio()) {
    if (auto addr = parse_listen_address(cl.comm); !addr) return addr.error();
  }
  return cl;
}

btstub::Expected<ListenAddress> parse_listen_address(const std::string& comm) {
  std::string text = comm;
  for (std::string_view prefix : {"tcp:", "tcp4:"}) {
    if (starts_with(text, prefix)) text = text.substr(prefix.size());
  }
  auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    return make_error(ErrorCode::InvalidArgument,
                      "Bad COMM '" + comm + "': expected [HOST]:PORT, '-' or 'stdio'");
  }
  ListenAddress addr;
  addr.host = text.substr(0, colon);
  if (addr.host.size() >= 2 && addr.host.front() == '[' && addr.host.back() == ']') {
    addr.host = addr.host.substr(1, addr.host.size() - 2);
  }
  if (addr.host.empty()) addr.host = "127.0.0.1";  // never listen on every address by accident
  auto port = parse_number(text.substr(colon + 1));
  if (!port || *port < 0 || *port > 65535) {
    return make_error(ErrorCode::InvalidArgument, "Bad port in '" + comm + "'");
  }
  addr.port = static_cast<unsigned short>(*port);
  return addr;
}

}  // namespace stub::server
