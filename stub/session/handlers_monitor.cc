// `monitor CMD` (qRcmd): a table of commands, each printing to gdb's console.
// As gdbserver answers: the text as O packets, then OK, or E01 when the
// command failed (unknown, refused, bad arguments); gdb prints the text and,
// for E01, "Protocol error with Rcmd". Never an E.text: gdb would decode it
// as hex output ("Invalid hex digit").
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "stub/session/handlers.h"
#include "stub/tracing/checkpoints.h"
#include "stub/tracing/trace_backend.h"
#include "stub/tracing/trace_size.h"

namespace stub::session {

using tracing::TraceConfig;

namespace {

struct MonitorOutput {
  std::string text;
  bool exit_server = false;
  bool failed = false;                 // E01 after the text
  std::optional<bool> packet_log{};    // set debug / set remote-debug
  std::optional<bool> packet_log_timestamps{};  // set debug-format
};

MonitorOutput failure(std::string text) {
  return MonitorOutput{.text = std::move(text), .failed = true};
}

// gdbserver prints nothing for `monitor exit` (its tests expect nothing).
MonitorOutput monitor_exit(Session&, const std::string&) { return MonitorOutput{.text = "", .exit_server = true}; }

std::string describe_config(const TraceConfig& config) {
  std::ostringstream out;
  out << config.buffer_bytes << "-byte buffers ("
      << decoder::bts_records_for_bytes(config.buffer_bytes) << " branches), "
      << (config.overflow == decoder::OverflowPolicy::Stop ? "stop the program" : "drop the oldest")
      << " when full";
  return out.str();
}

std::string record_status(Session& s, TraceBackend& backend) {
  backend.settle_traces();
  std::ostringstream out;
  out << "Branch recording (" << backend.name() << " backend): "
      << (backend.all_enabled() ? "every thread" : "per thread") << "; new threads get "
      << describe_config(backend.config()) << "; a thread's trace holds at most "
      << decoder::BlockTrace::kMemoryCap << " bytes.\n";
  if (std::string problem = backend.problem(); !problem.empty()) out << "Last failure: " << problem << "\n";
  // The program's threads, whichever process the client selected last: a
  // fork child gdb keeps (detach-on-fork off) is never recorded (the
  // tracer follows the program alone), and is said so.
  if (Process* selected = s.process(); selected != nullptr && selected != s.program()) {
    out << "  process " << selected->pid()
        << ": not recorded (btstub records only the program it started or attached to)\n";
  }
  if (Process* process = s.program()) {
    for (pid_t tid : process->threads()) {
      out << "  thread " << tid << ": ";
      const decoder::BlockTrace* trace = backend.trace(tid);
      if (!backend.enabled(tid)) {
        out << "not recording\n";
        continue;
      }
      if (trace == nullptr) {
        out << "recording from its next resume\n";
        continue;
      }
      out << trace->size() << " of " << trace->capacity() << " branches in " << trace->memory_bytes() << " bytes";
      if (trace->first_sequence() > 0) out << ", " << trace->first_sequence() << " older dropped";
      if (backend.stopped_full(tid)) out << ", stopped: buffer full";
      out << "\n";
    }
  }
  out << backend.activity();
  if (const tracing::Checkpoints* checkpoints = backend.checkpoints(); checkpoints && backend.all_enabled()) {
    out << checkpoints->status();
  }
  return out.str();
}

// Every thread's history bound (`record size`, `record start SIZE`); the
// refusal to show, if any.
std::optional<MonitorOutput> set_bound(Session& s, TraceBackend& backend, const std::string& text) {
  auto bytes = tracing::parse_trace_size(text);
  if (!bytes) return failure("Bad size '" + text + "': " + bytes.error().message + "\n");
  // A smaller bound may drop the branches a replaying thread stands in,
  // and going live would move it under the client's feet.
  if (s.any_replaying()) return failure("Cannot resize while replaying: go forward to the end first.\n");
  s.go_live();  // the engine lets go of the traces it read
  if (auto r = backend.set_bound(*bytes); !r) return failure("Cannot resize: " + r.error().message + "\n");
  return std::nullopt;
}

// monitor record start [SIZE]|stop|status|size SIZE: whole-program recording, as --record.
MonitorOutput monitor_record(Session& s, const std::string& args) {
  TraceBackend* backend = s.trace_backend;
  if (backend == nullptr) return failure("Branch tracing is not available in this btstub.\n");
  if (args == "start" || args.rfind("start ", 0) == 0) {
    if (s.non_stop) return failure("Recording is not supported in non-stop mode.\n");
    if (s.caught_syscalls) return failure("Cannot record while catching system calls (catch syscall).\n");
    // `start SIZE`: the bound first, so the new traces get it.
    if (args != "start") {
      if (auto refused = set_bound(s, *backend, args.substr(6))) return *refused;
    }
    if (auto r = backend->enable_all(); !r) return failure("Cannot start recording: " + r.error().message + "\n");
    return MonitorOutput{.text = "Recording the branches of every thread (" + std::string(backend->name()) +
                                 " backend, " + describe_config(backend->config()) + ").\n"};
  }
  if (args == "stop") {
    if (!s.records_a_thread()) return failure("Nothing is being recorded.\n");
    // gdb would go on showing the past it stands in, and then run from the
    // present: as for a resize, the client goes forward first.
    if (s.any_replaying()) return failure("Cannot stop recording while replaying: go forward to the end first.\n");
    s.go_live();  // the traces a replay stands in are about to go
    backend->disable_all();
    return MonitorOutput{.text = "Branch recording stopped; the traces are discarded.\n"};
  }
  if (args == "status" || args.empty()) return MonitorOutput{.text = record_status(s, *backend)};
  if (args.rfind("size ", 0) == 0) {
    if (auto refused = set_bound(s, *backend, args.substr(5))) return *refused;
    return MonitorOutput{.text = "Every thread now keeps " + describe_config(backend->config()) + ".\n"};
  }
  return failure("Usage: monitor record start [BYTES]|stop|status|size BYTES\n");
}

// monitor replay status: each replaying thread's position in its history.
MonitorOutput monitor_replay(Session& s, const std::string& args) {
  if (args == "status" || args.empty()) return MonitorOutput{.text = replay_status(s)};
  return failure("Usage: monitor replay status\n");
}

// Options of `set debug-format`, comma-separated, with gdbserver's words
// (gdbserver/debug.cc parse_debug_format_options); an empty option is
// skipped, an unknown one ends the list with its message. The one debug
// output btstub has, the packet log, takes the timestamps.
MonitorOutput debug_format(Session& s, const std::string& options) {
  MonitorOutput out;
  std::istringstream list(options);
  std::string option;
  while (std::getline(list, option, ',')) {
    if (option == "all") {
      s.packet_log_timestamps = true;
      out.text += "All extra debug format options enabled.\n";
    } else if (option == "none") {
      s.packet_log_timestamps = false;
      out.text += "All extra debug format options disabled.\n";
    } else if (option == "timestamp") {
      s.packet_log_timestamps = true;
      out.text += "Timestamps will be added to debug output.\n";
    } else if (!option.empty()) {
      out.text += "Unknown debug-format argument: \"" + option + "\"\n";
      out.failed = true;
      break;
    }
  }
  out.packet_log_timestamps = s.packet_log_timestamps;
  return out;
}

// gdbserver's `set` commands, with its words (gdbserver/server.cc
// handle_monitor_command). btstub's one debug output is the packet log of
// --remote-debug, for this connection: `debug` and `remote-debug` both
// switch it. `debug-hw-points` and `event-loop-debug` are answered as
// gdbserver does but switch nothing: btstub has no such output. The
// libthread_db search path counts from the next load of libthread_db (one
// loaded stays, as in gdbserver).
std::optional<MonitorOutput> monitor_set_command(Session& s, const std::string& args) {
  struct Switch {
    const char* command;
    const char* what;
    bool packet_log;
  };
  static constexpr Switch kSwitches[] = {{"debug", "Debug output", true},
                                         {"remote-debug", "Protocol debug output", true},
                                         {"debug-hw-points", "H/W point debugging output", false},
                                         {"event-loop-debug", "Event loop debug output", false}};
  for (const Switch& sw : kSwitches) {
    for (bool on : {false, true}) {
      if (args != std::string(sw.command) + (on ? " 1" : " 0")) continue;
      MonitorOutput out{.text = std::string(sw.what) + (on ? " enabled.\n" : " disabled.\n")};
      if (sw.packet_log) out.packet_log = on;
      return out;
    }
  }
  if (args.rfind("debug-format ", 0) == 0) return debug_format(s, args.substr(13));
  static const std::string kSearchPath = "libthread-db-search-path";
  if (args == kSearchPath || args.rfind(kSearchPath + " ", 0) == 0) {
    std::string path = args.size() > kSearchPath.size() ? args.substr(kSearchPath.size() + 1) : "";
    while (!path.empty() && path.front() == ' ') path.erase(0, 1);
    s.libthread_db_search_path = path.empty() ? "$sdir:$pdir" : path;  // gdbserver's default
    return MonitorOutput{.text = "libthread-db-search-path set to `" + s.libthread_db_search_path + "'\n"};
  }
  return std::nullopt;
}

// gdbserver's list, word for word: gdb's testsuite tells gdbserver from
// other servers by it ("Quit GDBserver", lib/gdb.exp target_is_gdbserver)
// and then expects gdbserver's behaviour (and marks its known bugs KFAIL).
// btstub's own commands follow in the same form.
constexpr const char* kHelp =
    "The following monitor commands are supported:\n"
    "  set debug <0|1>\n"
    "    Enable general debugging messages\n"
    "  set debug-hw-points <0|1>\n"
    "    Enable h/w breakpoint/watchpoint debugging messages\n"
    "  set remote-debug <0|1>\n"
    "    Enable remote protocol debugging messages\n"
    "  set event-loop-debug <0|1>\n"
    "    Enable event loop debugging messages\n"
    "  set debug-format option1[,option2,...]\n"
    "    Add additional information to debugging messages\n"
    "    Options: all, none, timestamp\n"
    "  exit\n"
    "    Quit GDBserver\n"
    "  record start [BYTES]|stop|status|size BYTES\n"
    "    Branch-trace every thread (as --record); BYTES bounds each thread's history (k/m suffixes)\n"
    "  replay status\n"
    "    Where each thread stands in its recorded history\n";

MonitorOutput monitor_help(Session&, const std::string&) { return MonitorOutput{.text = kHelp}; }

MonitorOutput unknown_command() { return failure(std::string("Unknown monitor command.\n\n") + kHelp); }

MonitorOutput monitor_set(Session& s, const std::string& args) {
  if (auto out = monitor_set_command(s, args)) {
    // A debug-format error: its message, then the list (as gdbserver).
    if (out->failed) out->text += kHelp;
    return *out;
  }
  return unknown_command();
}

using MonitorCommandFn = MonitorOutput (*)(Session&, const std::string& args);

const std::map<std::string, MonitorCommandFn, std::less<>>& monitor_commands() {
  static const std::map<std::string, MonitorCommandFn, std::less<>> commands = {
      {"help", monitor_help},     {"exit", monitor_exit}, {"record", monitor_record},
      {"replay", monitor_replay}, {"set", monitor_set},
  };
  return commands;
}

Reply monitor_reply(const MonitorOutput& out) {
  Reply reply = Reply::now(out.failed ? protocol::reply_error_code(1) : reply_ok());
  reply.console = out.text;
  reply.exit_server = out.exit_server;
  reply.packet_log = out.packet_log;
  reply.packet_log_timestamps = out.packet_log_timestamps;
  return reply;
}

}  // namespace

Reply monitor_failure(const std::string& message) { return monitor_reply(failure(message + "\n")); }

Reply handle(Session& s, const MonitorCommand& req) {
  std::string line = req.command;
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  std::string name = line.substr(0, line.find(' '));
  std::string args = name.size() < line.size() ? line.substr(name.size() + 1) : "";
  auto it = monitor_commands().find(name);
  // gdbserver's words, then the list of what there is (a bare `monitor`
  // too), as gdbserver does.
  if (it == monitor_commands().end() || ((name == "help" || name == "exit") && !args.empty())) {
    return monitor_reply(unknown_command());
  }
  return monitor_reply(it->second(s, args));
}

}  // namespace stub::session
