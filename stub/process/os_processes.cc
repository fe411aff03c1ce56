#include "stub/process/os_processes.h"

#include <pwd.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace stub::process {

namespace fs = std::filesystem;

namespace {

bool read_whole(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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

std::string user_name(const fs::path& status_path) {
  std::string status;
  if (!read_whole(status_path, status)) return "";
  auto at = status.find("\nUid:");
  if (at == std::string::npos) return "";
  uid_t uid = static_cast<uid_t>(std::strtoul(status.c_str() + at + 5, nullptr, 10));
  struct passwd entry {};
  struct passwd* found = nullptr;
  char buffer[1024];
  if (getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) == 0 && found != nullptr) return found->pw_name;
  return std::to_string(uid);
}

// Field 39 of stat (processor) is index 36 after the name.
std::vector<int> thread_cores(const fs::path& task_dir) {
  std::set<int> cores;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(task_dir, ec)) {
    std::string stat;
    std::string comm;
    std::vector<std::string> rest;
    if (!read_whole(task.path() / "stat", stat) || !split_stat(stat, comm, rest) || rest.size() <= 36) continue;
    cores.insert(std::atoi(rest[36].c_str()));
  }
  return {cores.begin(), cores.end()};
}

}  // namespace

std::string os_process_command(const std::string& cmdline, const std::string& comm) {
  std::string command = cmdline;
  while (!command.empty() && command.back() == '\0') command.pop_back();
  if (command.empty()) return "[" + comm + "]";
  std::replace(command.begin(), command.end(), '\0', ' ');
  return command;
}

std::vector<protocol::OsProcess> list_os_processes(const std::string& proc_root) {
  std::vector<protocol::OsProcess> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc_root, ec)) {
    std::string name = entry.path().filename().string();
    if (!all_digits(name)) continue;
    std::string stat;
    std::string comm;
    std::vector<std::string> rest;
    if (!read_whole(entry.path() / "stat", stat) || !split_stat(stat, comm, rest)) continue;  // gone
    std::string cmdline;
    (void)read_whole(entry.path() / "cmdline", cmdline);
    protocol::OsProcess process;
    process.pid = std::strtoll(name.c_str(), nullptr, 10);
    process.user = user_name(entry.path() / "status");
    process.command = os_process_command(cmdline, comm);
    process.cores = thread_cores(entry.path() / "task");
    out.push_back(std::move(process));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace stub::process
