// `monitor CMD` (qRcmd): a table of commands, each printing to gdb's console.
// As gdbserver answers: the text as O packets, then OK, or E01 when the
// command failed (unknown, refused, bad arguments); gdb prints the text and,
// for E01, "Protocol error with Rcmd". Never an E.text: gdb would decode it
// as hex output ("Invalid hex digit").
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
};

MonitorOutput failure(std::string text) {
  return MonitorOutput{.text = std::move(text), .failed = true};
}

using MonitorCommandFn = MonitorOutput (*)(Session&, const std::string& args);

MonitorOutput monitor_help(Session&, const std::string&);

MonitorOutput monitor_exit(Session&, const std::string&) {
  return MonitorOutput{.text = "btstub exiting\n", .exit_server = true};
}

std::string describe_config(const TraceConfig& config) {
  std::ostringstream out;
  out << config.buffer_bytes << "-byte buffers ("
      << decoder::bts_records_for_bytes(config.buffer_bytes) << " branches), "
      << (config.overflow == decoder::OverflowPolicy::Stop ? "stop the program" : "drop the oldest")
      << " when full";
  return out.str();
}

std::string record_status(Session& s, TraceBackend& backend) {
  std::ostringstream out;
  out << "Branch recording (" << backend.name() << " backend): "
      << (backend.all_enabled() ? "every thread" : "per thread") << "; new threads get "
      << describe_config(backend.config()) << "; a thread's trace holds at most "
      << decoder::BlockTrace::kMemoryCap << " bytes.\n";
  if (std::string problem = backend.problem(); !problem.empty()) out << "Last failure: " << problem << "\n";
  if (Process* process = s.process()) {
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
    // `start SIZE`: the bound first, so the new traces get it.
    if (args != "start") {
      if (auto refused = set_bound(s, *backend, args.substr(6))) return *refused;
    }
    if (auto r = backend->enable_all(); !r) return failure("Cannot start recording: " + r.error().message + "\n");
    return MonitorOutput{.text = "Recording the branches of every thread (" + std::string(backend->name()) +
                                 " backend, " + describe_config(backend->config()) + ").\n"};
  }
  if (args == "stop") {
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

// monitor set debug 0|1, set remote-debug 0|1: gdbserver's switches of its
// debug output, with its words. btstub's one debug output is the packet log
// of --remote-debug, for this connection: both switch it. gdbserver's other
// `set` commands (debug-hw-points, event-loop-debug, debug-format,
// debug-file) have nothing to switch here: refused with the usage.
MonitorOutput monitor_set(Session&, const std::string& args) {
  struct Switch {
    const char* command;
    const char* what;
  };
  static constexpr Switch kSwitches[] = {{"debug", "Debug output"}, {"remote-debug", "Protocol debug output"}};
  for (const Switch& sw : kSwitches) {
    for (bool on : {false, true}) {
      if (args != std::string(sw.command) + (on ? " 1" : " 0")) continue;
      return MonitorOutput{.text = std::string(sw.what) + (on ? " enabled.\n" : " disabled.\n"), .packet_log = on};
    }
  }
  return failure("Usage: monitor set debug <0|1> | set remote-debug <0|1>\n");
}

struct MonitorEntry {
  MonitorCommandFn fn;
  const char* help;
};

const std::map<std::string, MonitorEntry, std::less<>>& monitor_commands() {
  static const std::map<std::string, MonitorEntry, std::less<>> commands = {
      {"help", {monitor_help, "List monitor commands."}},
      {"exit", {monitor_exit, "End btstub (the program it started is killed)."}},
      {"record", {monitor_record, "record start [BYTES]|stop|status|size BYTES: branch-trace every thread (as --record); BYTES sets every thread's buffer bound (k/m suffixes)."}},
      {"replay", {monitor_replay, "replay status: where each thread stands in its recorded history."}},
      {"set", {monitor_set, "set debug <0|1>, set remote-debug <0|1>: log every packet on stderr (as --remote-debug), or stop."}},
  };
  return commands;
}

MonitorOutput monitor_help(Session&, const std::string&) {
  std::ostringstream out;
  out << "btstub monitor commands:\n";
  for (const auto& [name, entry] : monitor_commands()) out << "  " << name << " -- " << entry.help << "\n";
  return MonitorOutput{.text = out.str()};
}

Reply monitor_reply(const MonitorOutput& out) {
  Reply reply = Reply::now(out.failed ? protocol::reply_error_code(1) : reply_ok());
  reply.console = out.text;
  reply.exit_server = out.exit_server;
  reply.packet_log = out.packet_log;
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
  if (it == monitor_commands().end()) {
    // gdbserver's words, then the list of what there is (a bare `monitor`
    // too), as gdbserver does.
    return monitor_reply(failure("Unknown monitor command.\n\n" + monitor_help(s, "").text));
  }
  return monitor_reply(it->second.fn(s, args));
}

}  // namespace stub::session
