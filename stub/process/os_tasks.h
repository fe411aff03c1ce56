#pragma once
// The per-process `info os` tables read from /proc: threads, files (open
// descriptors) and procgroups, row for row as gdbserver 13.1 lists them.
#include <string>
#include <vector>

#include "protocol/osdata_xml.h"

namespace stub::process {

// Every thread of every process, by pid, then as task/ lists them.
std::vector<protocol::OsThread> list_os_threads(const std::string& proc_root = "/proc");

// Every descriptor of every process whose fd/ is readable, by pid then fd
// (as the directories list them).
std::vector<protocol::OsFile> list_os_files(const std::string& proc_root = "/proc");

// Every process with a process group, by group, the leader first, then by pid.
std::vector<protocol::OsProcessGroupMember> list_os_process_groups(const std::string& proc_root = "/proc");

}  // namespace stub::process
