#pragma once
// The host's process table from /proc, for qXfer:osdata:read:processes
// (`info os processes`): pid, owner, command line and the cores its threads
// last ran on, as gdbserver lists them.
#include <string>
#include <vector>

#include "protocol/osdata_xml.h"

namespace stub::process {

// Every process readable in /proc, by increasing pid. A process that vanishes
// while being read is left out; an unreadable detail stays empty.
std::vector<protocol::OsProcess> list_os_processes(const std::string& proc_root = "/proc");

// The command column for one process: its argv joined by spaces, or, for a
// process without a command line (kernel threads), its name in brackets.
std::string os_process_command(const std::string& cmdline, const std::string& comm);

}  // namespace stub::process
