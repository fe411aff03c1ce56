#include "stub/process/host_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <string>

namespace stub::process {

namespace {

std::string fail(int host_errno) {
  return protocol::reply_file_result(-1, protocol::host_errno_to_fileio(host_errno));
}

// gdb never asks for more than a packet's worth; cap so a hostile count
// cannot make us allocate without bound.
constexpr uint64_t kMaxPread = 16384;

}  // namespace

HostFiles::~HostFiles() { close_all(); }

void HostFiles::close_all() {
  for (auto& [client_fd, host_fd] : fds_) ::close(host_fd);
  fds_.clear();
}

std::string HostFiles::resolve(const std::string& path) const {
  if (fs_pid_ == 0 || path.empty() || path[0] != '/') return path;
  return "/proc/" + std::to_string(fs_pid_) + "/root" + path;
}

std::string HostFiles::open(const std::string& path, int fileio_flags, int mode) {
  if (fds_.size() >= kMaxOpen) return fail(EMFILE);
  int host_flags = protocol::fileio_open_flags_to_host(fileio_flags);
  if (host_flags < 0) return fail(EINVAL);
  // Never blocking: a FIFO opened for reading waited for a writer, and
  // btstub with it, answering nothing more (gdbserver hangs there too). A
  // read of something empty that would wait (a FIFO, /proc/kmsg) fails
  // instead; regular files read as ever.
  int fd = ::open(resolve(path).c_str(), host_flags | O_CLOEXEC | O_NONBLOCK, mode & 0777);
  if (fd < 0) return fail(errno);
  while (fds_.count(next_fd_) != 0) ++next_fd_;
  int client_fd = next_fd_++;
  if (next_fd_ == std::numeric_limits<int>::max()) next_fd_ = 1;
  fds_[client_fd] = fd;
  return protocol::reply_file_result(client_fd);
}

std::string HostFiles::close(int fd) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return fail(EBADF);
  ::close(it->second);
  fds_.erase(it);
  return protocol::reply_file_result(0);
}

std::string HostFiles::pread(int fd, uint64_t count, uint64_t offset) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return fail(EBADF);
  if (offset > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) return fail(EINVAL);
  std::string data(std::min(count, kMaxPread), '\0');
  ssize_t n = ::pread(it->second, data.data(), data.size(), static_cast<off_t>(offset));
  if (n < 0) return fail(errno);
  data.resize(static_cast<std::size_t>(n));
  return protocol::reply_file_data(n, data);
}

std::string HostFiles::pwrite(int fd, uint64_t offset, std::string_view data) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return fail(EBADF);
  if (offset > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) return fail(EINVAL);
  ssize_t n;
  do {
    n = ::pwrite(it->second, data.data(), data.size(), static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail(errno);
  return protocol::reply_file_result(n);
}

std::string HostFiles::fstat(int fd) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return fail(EBADF);
  struct stat st {};
  if (::fstat(it->second, &st) != 0) return fail(errno);
  protocol::FileioStat out;
  out.dev = static_cast<uint32_t>(st.st_dev);
  out.ino = static_cast<uint32_t>(st.st_ino);
  out.mode = st.st_mode;
  out.nlink = static_cast<uint32_t>(st.st_nlink);
  out.uid = st.st_uid;
  out.gid = st.st_gid;
  out.rdev = static_cast<uint32_t>(st.st_rdev);
  out.size = static_cast<uint64_t>(st.st_size);
  out.blksize = static_cast<uint64_t>(st.st_blksize);
  out.blocks = static_cast<uint64_t>(st.st_blocks);
  out.atime = static_cast<uint32_t>(st.st_atime);
  out.mtime = static_cast<uint32_t>(st.st_mtime);
  out.ctime = static_cast<uint32_t>(st.st_ctime);
  std::string raw = protocol::encode_fileio_stat(out);
  return protocol::reply_file_data(static_cast<int64_t>(raw.size()), raw);
}

std::string HostFiles::readlink(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(resolve(path).c_str(), buf, sizeof buf);
  if (n < 0) return fail(errno);
  return protocol::reply_file_data(n, std::string_view(buf, static_cast<std::size_t>(n)));
}

std::string HostFiles::unlink(const std::string& path) {
  if (::unlink(resolve(path).c_str()) != 0) return fail(errno);
  return protocol::reply_file_result(0);
}

std::string HostFiles::setfs(int64_t pid) {
  if (pid < 0) return fail(EINVAL);
  fs_pid_ = pid;
  return protocol::reply_file_result(0);
}

}  // namespace stub::process
