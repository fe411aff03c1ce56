#pragma once
// btstub's command line, compatible with gdbserver's:
//   btstub [OPTIONS] COMM PROG [ARGS..]
//   btstub [OPTIONS] --attach COMM PID
//   btstub [OPTIONS] --multi COMM
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/expected.h"
#include "stub/tracing/checkpoints.h"
#include "stub/tracing/trace_backend.h"
#include "stub/tracing/trace_size.h"

namespace stub::server {

using tracing::TraceBackendChoice;
using tracing::TraceConfig;

// --trace-stops: how the software tracer stops a thread at the end of a
// block (stub::tracing::TraceStops).
enum class TraceStopChoice {
  Int3,           // int3s with emulated transfers and lookahead (fewest ptrace stops)
  DebugRegister,  // a debug-register execution breakpoint per block
  SingleStep,     // every instruction stepped (slow, for comparison)
  Translate,      // translated code in a cache in the program logs the branches
                  // (stub::tracing::TranslatingTracer); int3s where it cannot
                  // (default: fewest stops of all)
};

// --checkpoint-every's defaults (CommandLine::checkpoint_spacing).
inline constexpr uint64_t kCheckpointEvery = tracing::CheckpointLimits{}.every_branches;
inline constexpr uint64_t kTranslatedCheckpointEvery = 4000000;
// What the translating tracer's stretches are filled in to while the
// client is idle (tracing::CheckpointLimits::fill_in_branches).
inline constexpr uint64_t kTranslatedFillInEvery = 100000;

// Limits of --trace-size: one BTS record, and a bound that keeps a typo
// from reserving the machine's memory (the buffer is allocated up front).
using tracing::kMinTraceSize;
using tracing::kMaxTraceSize;

// --busy-poll: how long btstub keeps polling for the client's next packet (or
// a step's stop) before it sleeps. Long enough to cover gdb's turnaround
// between the packets of one command (tens to a few hundred µs here); the
// upper bound keeps a typo from spinning a CPU for seconds per packet.
inline constexpr unsigned kDefaultBusyPollMicroseconds = 500;
inline constexpr unsigned kMaxBusyPollMicroseconds = 100000;

// --replay-progress: how often a long replay scan tells the client how far
// it has come (stub/server/connection.h, replay_turn).
inline constexpr unsigned kDefaultReplayProgressSeconds = 2;
inline constexpr unsigned kMaxReplayProgressSeconds = 3600;

struct CommandLine {
  enum class Mode { Launch, Attach, Multi, Help, Version, Probe, Selftest };  // Probe: --probe
  Mode mode = Mode::Launch;
  std::string comm;                    // "[HOST]:PORT", "-" or "stdio"
  std::vector<std::string> program;    // PROG ARGS..
  int attach_pid = 0;
  bool once = false;
  bool disable_randomization = true;
  std::vector<std::string> wrapper;
  // Start programs through $SHELL (else /bin/sh), as gdbserver does unless
  // told --no-startup-with-shell.
  bool startup_with_shell = true;
  std::set<std::string> disabled_packets;
  bool remote_debug = false;           // log packets on stderr
  bool pin_cpu = true;                 // --no-pin-cpu clears: see stub/server/cpu_affinity.h
  bool step_ahead = true;              // --no-step-ahead clears: see stub/session/step_ahead.h
  unsigned busy_poll_us = kDefaultBusyPollMicroseconds;  // --busy-poll=: see stub/server/connection.h
  unsigned replay_progress_seconds = kDefaultReplayProgressSeconds;  // --replay-progress=
  bool record = false;                 // --record: trace every thread from the first instruction
  TraceBackendChoice trace_backend = TraceBackendChoice::Auto;  // --backend=
  TraceConfig trace_config;            // --trace-size=, --trace-full=
  bool trace_size_given = false;       // --trace-size= was on the command line
  uint64_t checkpoint_memory = uint64_t{1} << 30;  // --checkpoint-memory= (0: no checkpoints)
  std::optional<uint64_t> checkpoint_every;  // --checkpoint-every= (branches; tracing::CheckpointLimits)
  TraceStopChoice trace_stops = TraceStopChoice::Translate;  // --trace-stops=
  bool trace_stops_given = false;  // named on the command line: failing to set it up is fatal
  bool no_vfile = false;               // --no-vfile: vFile (host file access) unsupported
  bool no_run = false;                 // --no-run: vRun/vAttach/R refused (docs/security.md)

  bool stdio() const { return comm == "-" || comm == "stdio"; }
  // Branches between two periodic checkpoints: --checkpoint-every=, else
  // what suits the tracer. A checkpoint (a fork of the program) costs as
  // much as ~50 branches under int3 trace stops, where 700 keeps a re-run
  // short; in translated code a fork and the copy-on-write faults after it
  // cost the program milliseconds (Lua and zlib recorded in 1.6-2.6x the
  // time at 100,000 than with none but at system calls:
  // docs/performance.md), so the recording takes them 4,000,000 apart and
  // fills in every 100,000 (checkpoint_fill_in) while the client is idle.
  // A re-run from one counts its visits in the copy (docs/past-state.md).
  uint64_t checkpoint_spacing() const {
    if (checkpoint_every) return *checkpoint_every;
    return trace_stops == TraceStopChoice::Translate ? kTranslatedCheckpointEvery : kCheckpointEvery;
  }
  // The spacing checkpoints are filled in to afterwards (0: none): only by
  // default under the translating tracer; --checkpoint-every fixes it.
  uint64_t checkpoint_fill_in() const {
    if (checkpoint_every || trace_stops != TraceStopChoice::Translate) return 0;
    return kTranslatedFillInEvery;
  }
};

btstub::Expected<CommandLine> parse_command_line(const std::vector<std::string>& args);
std::string usage_text();
// "--trace-size=" values: decimal or 0x hex bytes, optional k/K or m/M suffix.
btstub::Expected<uint64_t> parse_trace_size(const std::string& text);

// Where to listen: host defaults to 127.0.0.1 for a bare ":PORT".
struct ListenAddress {
  std::string host;
  unsigned short port = 0;
};
btstub::Expected<ListenAddress> parse_listen_address(const std::string& comm);

}  // namespace stub::server
