#pragma once
// Who a process is, as /proc/PID/status says: its parent and its real and
// effective user and group ids (LLDB's qProcessInfo asks for them).
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace stub::process {

struct ProcessIdentity {
  struct Ids {
    uint64_t real_uid = 0;
    uint64_t effective_uid = 0;
    uint64_t real_gid = 0;
    uint64_t effective_gid = 0;
  };
  std::optional<uint64_t> parent;  // PPid
  std::optional<Ids> ids;          // Uid and Gid, both or neither
};

// From the text of /proc/PID/status; what it lacks stays unknown.
ProcessIdentity parse_process_status(const std::string& status);

// /proc/PID/status read now; nullopt when it cannot be read.
std::optional<ProcessIdentity> read_process_identity(pid_t pid);

}  // namespace stub::process
