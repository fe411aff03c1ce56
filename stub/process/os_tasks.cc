#include "stub/process/os_tasks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "stub/process/os_proc_text.h"

namespace stub::process {

namespace {

// The pids under proc_root, as gdbserver sees them: at most ten digits.
std::vector<std::string> pid_names(const std::string& proc_root) {
  auto names = numeric_entries(proc_root);
  std::erase_if(names, [](const std::string& name) { return name.size() > 10; });
  return names;
}

}  // namespace

std::vector<protocol::OsThread> list_os_threads(const std::string& proc_root) {
  std::vector<protocol::OsThread> out;
  for (const auto& name : pid_names(proc_root)) {
    long long pid = std::atoll(name.c_str());
    std::string command = short_command(pid, proc_root);
    for (const auto& task : numeric_entries(proc_root + "/" + name + "/task")) {
      if (task.size() > 10) continue;
      long long tid = std::atoll(task.c_str());
      out.push_back({pid, command, tid, core_of_thread(pid, tid, proc_root)});
    }
  }
  return out;
}

std::vector<protocol::OsFile> list_os_files(const std::string& proc_root) {
  std::vector<protocol::OsFile> out;
  for (const auto& name : pid_names(proc_root)) {
    long long pid = std::atoll(name.c_str());
    std::string command = short_command(pid, proc_root);
    std::string fd_dir = proc_root + "/" + name + "/fd";
    for (const auto& fd : numeric_entries(fd_dir)) {
      char target[1000];
      ssize_t length = readlink((fd_dir + "/" + fd).c_str(), target, sizeof target - 1);
      out.push_back({pid, command, fd, length >= 0 ? std::string(target, static_cast<std::size_t>(length)) : fd});
    }
  }
  return out;
}

std::vector<protocol::OsProcessGroupMember> list_os_process_groups(const std::string& proc_root) {
  struct Member {
    long long pid;
    long long pgid;
  };
  std::vector<Member> members;
  for (const auto& name : numeric_entries(proc_root)) {
    if (name.size() > 20) continue;
    long long pid = std::atoll(name.c_str());
    pid_t pgid = getpgid(static_cast<pid_t>(pid));
    if (pgid > 0) members.push_back({pid, pgid});
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    if (a.pgid != b.pgid) return a.pgid < b.pgid;
    bool a_leads = a.pid == a.pgid;
    bool b_leads = b.pid == b.pgid;
    if (a_leads != b_leads) return a_leads;
    return a.pid < b.pid;
  });
  std::vector<protocol::OsProcessGroupMember> out;
  out.reserve(members.size());
  for (const auto& member : members) {
    out.push_back({member.pgid, short_command(member.pgid, proc_root), member.pid,
                   command_line(member.pid, proc_root).value_or("")});
  }
  return out;
}

}  // namespace stub::process
