#include "stub/process/proc_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace stub::process {

btstub::Expected<std::string> read_whole_file(const std::string& path) {
  using btstub::ErrorCode;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return btstub::make_error(ErrorCode::IoError, "Cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int err = errno;
      ::close(fd);
      return btstub::make_error(ErrorCode::IoError, "Cannot read " + path + ": " + std::strerror(err));
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return text;
}

std::optional<std::string> read_proc_file(const std::string& path) {
  auto text = read_whole_file(path);
  if (!text) return std::nullopt;
  return std::move(*text);
}

}  // namespace stub::process
