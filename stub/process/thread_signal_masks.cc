#include "stub/process/thread_signal_masks.h"

#include <charconv>
#include <string>
#include <string_view>

#include "stub/process/proc_file.h"

namespace stub::process {

std::optional<ThreadSignalMasks> read_thread_signal_masks(pid_t tid) {
  const std::optional<std::string> status = read_proc_file("/proc/" + std::to_string(tid) + "/status");
  if (!status) return std::nullopt;
  ThreadSignalMasks masks;
  int found = 0;
  std::string_view rest = *status;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    uint64_t* field = name == "SigPnd"   ? &masks.thread_pending
                      : name == "ShdPnd" ? &masks.shared_pending
                      : name == "SigBlk" ? &masks.blocked
                      : name == "SigIgn" ? &masks.ignored
                      : name == "SigCgt" ? &masks.caught
                                         : nullptr;
    if (field == nullptr) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == '\t' || value.front() == ' ')) value.remove_prefix(1);
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), *field, 16);
    if (ec != std::errc{} || ptr == value.data()) return std::nullopt;
    ++found;
  }
  if (found != 5) return std::nullopt;
  return masks;
}

}  // namespace stub::process
