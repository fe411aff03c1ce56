#include "stub/process/os_processes.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <set>
#include <sstream>

#include "stub/process/os_proc_text.h"
#include "stub/process/proc_file.h"

namespace stub::process {

namespace fs = std::filesystem;

namespace {

bool read_whole(const fs::path& path, std::string& out) {
  auto text = read_proc_file(path.string());
  if (!text) return false;
  out = std::move(*text);
  return true;
}

bool all_digits(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The name inside the parentheses of /proc/PID/stat, and the fields after it.
// The name may itself hold spaces and parentheses, hence the last ')'.
bool split_stat(const std::string& stat, std::string& comm, std::vector<std::string>& rest) {
  auto open = stat.find('(');
  auto close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  comm = stat.substr(open + 1, close - open - 1);
  std::istringstream fields(stat.substr(close + 1));
  rest.assign(std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>());
  return true;
}

// The owner of /proc/PID (the process's effective uid) by name, as gdbserver
// shows it: empty when the uid has no name, "?" when there is no directory.
std::string owner_name(const fs::path& pid_dir) {
  struct stat info {};
  if (stat(pid_dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return "?";
  return user_name(info.st_uid);
}

// Field 39 of stat (processor) is index 36 after the name.
std::vector<int> thread_cores(const fs::path& task_dir) {
  std::set<int> cores;
  for (const std::string& task : entry_names(task_dir.string())) {
    std::string stat;
    std::string comm;
    std::vector<std::string> rest;
    if (!read_whole(task_dir / task / "stat", stat) || !split_stat(stat, comm, rest) || rest.size() <= 36) continue;
    cores.insert(std::atoi(rest[36].c_str()));
  }
  return {cores.begin(), cores.end()};
}

}  // namespace

std::vector<protocol::OsProcess> list_os_processes(const std::string& proc_root) {
  std::vector<protocol::OsProcess> out;
  for (const std::string& name : entry_names(proc_root)) {
    if (!all_digits(name)) continue;
    const fs::path entry_path = fs::path(proc_root) / name;
    std::string stat;
    std::string comm;
    std::vector<std::string> rest;
    if (!read_whole(entry_path / "stat", stat) || !split_stat(stat, comm, rest)) continue;  // gone
    protocol::OsProcess process;
    process.pid = std::strtoll(name.c_str(), nullptr, 10);
    process.user = owner_name(entry_path);
    process.command = command_line(process.pid, proc_root).value_or("");
    process.cores = thread_cores(entry_path / "task");
    out.push_back(std::move(process));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace stub::process
