#pragma once
// btstub's command line, compatible with gdbserver's:
//   btstub [OPTIONS] COMM PROG [ARGS..]
//   btstub [OPTIONS] --attach COMM PID
//   btstub [OPTIONS] --multi COMM
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/expected.h"

namespace stub {

struct CommandLine {
  enum class Mode { Launch, Attach, Multi, Help, Version };
  Mode mode = Mode::Launch;
  std::string comm;                    // "[HOST]:PORT", "-" or "stdio"
  std::vector<std::string> program;    // PROG ARGS..
  int attach_pid = 0;
  bool once = false;
  bool disable_randomization = true;
  std::vector<std::string> wrapper;
  std::set<std::string> disabled_packets;
  bool remote_debug = false;           // log packets on stderr

  bool stdio() const { return comm == "-" || comm == "stdio"; }
};

btstub::Expected<CommandLine> parse_command_line(const std::vector<std::string>& args);
std::string usage_text();

// Where to listen: host defaults to 127.0.0.1 for a bare ":PORT".
struct ListenAddress {
  std::string host;
  unsigned short port = 0;
};
btstub::Expected<ListenAddress> parse_listen_address(const std::string& comm);

}  // namespace stub
