#include "stub/server/malloc_restart.h"

#include <unistd.h>

#include <climits>

namespace stub::server {
namespace {

constexpr std::string_view kTunables = "GLIBC_TUNABLES=";
// Huge pages, and the heap grown 32 MiB at a time rather than a few pages
// at a time, where only the first stretch is advised: top_pad is what
// glibc adds to each growth of the main arena (the only one: main.cc) and
// keeps when it trims (so up to 32 MiB stays mapped after a recording
// ends).
constexpr std::string_view kSettings = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432";
// What GLIBC_TUNABLES was when btstub was given its environment.
constexpr std::string_view kMarker = "BTSTUB_GIVEN_GLIBC_TUNABLES=";
constexpr std::string_view kWasAbsent = "absent";
constexpr std::string_view kWas = "was:";

bool is_marker(const std::string& entry) { return entry.starts_with(kMarker); }

// An environment array (null-terminated) over `entries`, which must outlive it.
std::vector<char*> environment_array(std::vector<std::string>& entries) {
  std::vector<char*> out;
  for (std::string& entry : entries) out.push_back(entry.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) out.emplace_back(*entry);
  return out;
}

std::optional<std::vector<std::string>> restart_environment(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  std::optional<std::string> tunables;
  for (const std::string& entry : given) {
    if (is_marker(entry)) return std::nullopt;
    if (!entry.starts_with(kTunables)) {
      out.push_back(entry);
      continue;
    }
    if (tunables) return std::nullopt;  // which one glibc reads is its own business
    tunables = entry.substr(kTunables.size());
    if (tunables->find("glibc.malloc.hugetlb=") != std::string::npos ||
        tunables->find("glibc.malloc.top_pad=") != std::string::npos) {
      return std::nullopt;  // the user's choice
    }
    out.push_back(std::string(kTunables) + (tunables->empty() ? "" : *tunables + ":") + std::string(kSettings));
  }
  if (!tunables) out.push_back(std::string(kTunables) + std::string(kSettings));
  out.push_back(std::string(kMarker) + (tunables ? std::string(kWas) + *tunables : std::string(kWasAbsent)));
  return out;
}

std::vector<std::string> given_environment(const std::vector<std::string>& started) {
  std::optional<std::string> marker;
  for (const std::string& entry : started) {
    if (is_marker(entry)) marker = entry.substr(kMarker.size());
  }
  if (!marker) return started;
  const bool was_absent = !marker->starts_with(kWas);
  std::vector<std::string> out;
  for (const std::string& entry : started) {
    if (is_marker(entry)) continue;
    if (entry.starts_with(kTunables)) {
      if (was_absent) continue;
      out.push_back(std::string(kTunables) + marker->substr(kWas.size()));
      continue;
    }
    out.push_back(entry);
  }
  return out;
}

bool restore_given_environment() {
  const std::vector<std::string> started = current_environment();
  std::vector<std::string> given = given_environment(started);
  if (given == started) return false;
  // For the life of the process: `environ` points into these.
  static std::vector<std::string> kept;
  static std::vector<char*> pointers;
  kept = std::move(given);
  pointers = environment_array(kept);
  environ = pointers.data();
  return true;
}

void restart_with_malloc_settings(char** argv) {
  auto env = restart_environment(current_environment());
  if (!env) return;
  // The file's own path, not /proc/self/exe: the kernel names the process
  // after the path it executes (ps, pgrep and /proc/PID/comm say btstub).
  char self[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return;
  self[length] = '\0';
  ::execve(self, argv, environment_array(*env).data());
  // Gone or replaced (" (deleted)"), E2BIG...: on with glibc's defaults.
}

}  // namespace stub::server
