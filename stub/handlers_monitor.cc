// `monitor CMD` (qRcmd): a table of commands, each printing to gdb's console.
#include <map>
#include <sstream>

#include "stub/handlers.h"

namespace stub {

namespace {

struct MonitorOutput {
  std::string text;
  bool exit_server = false;
};

using MonitorCommandFn = MonitorOutput (*)(Session&, const std::string& args);

MonitorOutput monitor_help(Session&, const std::string&);

MonitorOutput monitor_exit(Session&, const std::string&) {
  return MonitorOutput{"btstub exiting\n", true};
}

struct MonitorEntry {
  MonitorCommandFn fn;
  const char* help;
};

const std::map<std::string, MonitorEntry, std::less<>>& monitor_commands() {
  static const std::map<std::string, MonitorEntry, std::less<>> commands = {
      {"help", {monitor_help, "List monitor commands."}},
      {"exit", {monitor_exit, "End btstub (the program it started is killed)."}},
  };
  return commands;
}

MonitorOutput monitor_help(Session&, const std::string&) {
  std::ostringstream out;
  out << "btstub monitor commands:\n";
  for (const auto& [name, entry] : monitor_commands()) out << "  " << name << " -- " << entry.help << "\n";
  return MonitorOutput{out.str(), false};
}

}  // namespace

Reply handle(Session& s, const MonitorCommand& req) {
  std::string line = req.command;
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  std::string name = line.substr(0, line.find(' '));
  std::string args = name.size() < line.size() ? line.substr(name.size() + 1) : "";
  auto it = monitor_commands().find(name);
  if (it == monitor_commands().end()) {
    return Reply::now(reply_error(btstub::make_error(
        btstub::ErrorCode::InvalidArgument, "Unknown monitor command '" + name + "'; try 'monitor help'")));
  }
  MonitorOutput out = it->second.fn(s, args);
  // Console output goes as an O packet before the final OK.
  Reply reply = Reply::now(reply_ok());
  reply.console = out.text;
  reply.exit_server = out.exit_server;
  return reply;
}

}  // namespace stub
