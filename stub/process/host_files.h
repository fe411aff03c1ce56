#pragma once
// Files gdb opens on the target through vFile (host I/O). The table owns the
// descriptors so a client cannot close ours, and closes them all at the end
// of the session.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "protocol/expected.h"
#include "protocol/replies.h"

namespace stub::process {

class HostFiles {
 public:
  static constexpr std::size_t kMaxOpen = 64;

  HostFiles() = default;
  HostFiles(const HostFiles&) = delete;
  HostFiles& operator=(const HostFiles&) = delete;
  ~HostFiles();

  // Each returns the File-I/O reply payload (F...).
  std::string open(const std::string& path, int fileio_flags, int mode);
  std::string close(int fd);
  std::string pread(int fd, uint64_t count, uint64_t offset);
  // One pwrite(2): the reply holds the count written, which gdb's `remote
  // put` compares with what it sent and continues from.
  std::string pwrite(int fd, uint64_t offset, std::string_view data);
  std::string fstat(int fd);
  std::string readlink(const std::string& path);
  std::string unlink(const std::string& path);
  // setfs: 0 means btstub's own filesystem; otherwise paths resolve inside
  // /proc/PID/root, which is what gdb means by the process's filesystem.
  std::string setfs(int64_t pid);

  void close_all();

 private:
  std::string resolve(const std::string& path) const;
  std::map<int, int> fds_;  // client-visible fd -> host fd
  int next_fd_ = 1;
  int64_t fs_pid_ = 0;
};

}  // namespace stub::process
