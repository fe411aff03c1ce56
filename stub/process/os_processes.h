#pragma once
// The host's process table from /proc, for qXfer:osdata:read:processes
// (`info os processes`): pid, owner, command line and the cores its threads
// last ran on, as gdbserver lists them.
#include <string>
#include <vector>

#include "protocol/osdata_xml.h"

namespace stub::process {

// Every process readable in /proc, by increasing pid. A process that vanishes
// while being read is left out; an unreadable detail stays empty. The owner
// and command are gdbserver's (os_proc_text.h): /proc/PID's owner, and the
// command line with every NUL a space, "[name]" for kernel threads.
std::vector<protocol::OsProcess> list_os_processes(const std::string& proc_root = "/proc");

}  // namespace stub::process
