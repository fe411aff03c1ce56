#include "stub/process/os_proc_text.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "stub/process/proc_file.h"

namespace stub::process {

namespace fs = std::filesystem;

namespace {

std::string pid_dir(const std::string& proc_root, long long pid) { return proc_root + "/" + std::to_string(pid); }

// Names are at most this long in gdbserver's fixed buffers (UT_NAMESIZE - 1).
constexpr std::size_t kNameLimit = 31;

}  // namespace

std::vector<std::string> entry_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  // Not a range-for: its increment throws when a read fails midway.
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  return names;
}

std::vector<std::string> numeric_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (std::string& name : entry_names(dir)) {
    if (!name.empty() && name[0] >= '0' && name[0] <= '9') names.push_back(std::move(name));
  }
  return names;
}

std::string short_command(long long pid, const std::string& proc_root) {
  auto stat = read_proc_file(pid_dir(proc_root, pid) + "/stat");
  if (!stat) return std::to_string(pid);
  long long stat_pid = 0;
  char word[18] = {};
  if (std::sscanf(stat->c_str(), "%lld %17s", &stat_pid, word) != 2 || stat_pid != pid) return "";
  std::string name(word);
  name.pop_back();  // the closing parenthesis, or whatever ends the first word
  return name.empty() ? "" : name.substr(1);  // "( x)": the word is "(" alone
}

std::optional<std::string> command_line(long long pid, const std::string& proc_root) {
  auto text = read_proc_file(pid_dir(proc_root, pid) + "/cmdline");
  if (!text) return std::nullopt;
  if (text->empty()) return "[" + short_command(pid, proc_root).substr(0, 30) + "]";
  std::replace(text->begin(), text->end(), '\0', ' ');
  return text;
}

int core_of_thread(long long pid, long long tid, const std::string& proc_root) {
  auto stat = read_proc_file(pid_dir(proc_root, pid) + "/task/" + std::to_string(tid) + "/stat");
  if (!stat) return -1;
  auto at = stat->rfind(')');
  if (at == std::string::npos) return -1;
  // Field 39 (processor) is the 37th after the name; a stat cut short
  // reads as core 0, as in gdbserver.
  for (int field = 0; field < 37; ++field) {
    at = stat->find(' ', at);
    if (at == std::string::npos) return 0;
    at = stat->find_first_not_of(' ', at);
    if (at == std::string::npos) return 0;
  }
  int core = -1;
  if (std::sscanf(stat->c_str() + at, "%d", &core) != 1) return -1;
  return core;
}

std::string user_name(uid_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  char buffer[1024];
  if (getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) return "";
  return std::string(found->pw_name).substr(0, kNameLimit);
}

std::string group_name(gid_t gid) {
  struct group entry {};
  struct group* found = nullptr;
  char buffer[4096];
  if (getgrgid_r(gid, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) return "";
  return std::string(found->gr_name).substr(0, kNameLimit);
}

std::string time_text(long long seconds) {
  if (seconds == 0) return "";
  time_t t = static_cast<time_t>(seconds);
  char buffer[32];
  if (ctime_r(&t, buffer) == nullptr) return "";
  return std::string(buffer).substr(0, kNameLimit);
}

}  // namespace stub::process
