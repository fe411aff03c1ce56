#include "stub/process/process_identity.h"

#include <sstream>
#include <vector>

#include "stub/process/proc_file.h"

namespace stub::process {

namespace {

// "Uid:\t0\t0\t0\t0" and the like: the first `count` numbers after `key`.
std::vector<uint64_t> status_numbers(const std::string& status, const std::string& key, std::size_t count) {
  std::istringstream lines(status);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(key + ":")) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::vector<uint64_t> out;
    uint64_t value = 0;
    while (out.size() < count && fields >> value) out.push_back(value);
    return out;
  }
  return {};
}

}  // namespace

ProcessIdentity parse_process_status(const std::string& status) {
  ProcessIdentity identity;
  if (auto parent = status_numbers(status, "PPid", 1); parent.size() == 1) identity.parent = parent[0];
  auto uids = status_numbers(status, "Uid", 2);
  auto gids = status_numbers(status, "Gid", 2);
  if (uids.size() == 2 && gids.size() == 2) identity.ids = ProcessIdentity::Ids{uids[0], uids[1], gids[0], gids[1]};
  return identity;
}

std::optional<ProcessIdentity> read_process_identity(pid_t pid) {
  auto status = read_proc_file("/proc/" + std::to_string(pid) + "/status");
  if (!status) return std::nullopt;
  return parse_process_status(*status);
}

}  // namespace stub::process
