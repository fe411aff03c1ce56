// gdb's File-I/O protocol values for vFile: results, errno numbers, open
// flags and the fixed big-endian struct stat.
#include <cerrno>
#include <fcntl.h>

#include "protocol/replies.h"
#include "protocol/rsp_link.h"

namespace protocol {
namespace {

// Hex with a '-' for negative values, as vFile results are written.
std::string signed_hex(int64_t value) {
  uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[magnitude & 0xf]);
    magnitude >>= 4;
  } while (magnitude != 0);
  return value < 0 ? "-" + out : out;
}

template <class T>
void put_big_endian(std::string& out, T value) {
  for (int shift = static_cast<int>(sizeof(T) * 8) - 8; shift >= 0; shift -= 8)
    out += static_cast<char>((value >> shift) & 0xff);
}

// File-I/O protocol open flags (gdb manual, "Open Flags").
constexpr int kFileioRdonly = 0x0;
constexpr int kFileioWronly = 0x1;
constexpr int kFileioRdwr = 0x2;
constexpr int kFileioAppend = 0x8;
constexpr int kFileioCreat = 0x200;
constexpr int kFileioTrunc = 0x400;
constexpr int kFileioExcl = 0x800;
constexpr int kFileioAccmode = 0x3;

}  // namespace

std::string reply_file_result(int64_t result, int error_number) {
  if (result == -1) return "F-1," + signed_hex(error_number);
  return "F" + signed_hex(result);
}

std::string reply_file_data(int64_t result, std::string_view data) {
  if (result < 0) return reply_file_result(result);
  // The head is longest for the whole length: what it leaves fits whatever
  // length is written.
  const std::size_t head = 2 + signed_hex(result).size();
  std::size_t taken = 0;
  const std::string escaped = escape_binary_within(data, RspLink::kMaxPayload - head, taken);
  return "F" + signed_hex(static_cast<int64_t>(taken)) + ";" + escaped;
}

std::string encode_fileio_stat(const FileioStat& st) {
  std::string out;
  out.reserve(64);
  for (uint32_t v : {st.dev, st.ino, st.mode, st.nlink, st.uid, st.gid, st.rdev}) put_big_endian(out, v);
  for (uint64_t v : {st.size, st.blksize, st.blocks}) put_big_endian(out, v);
  for (uint32_t v : {st.atime, st.mtime, st.ctime}) put_big_endian(out, v);
  return out;
}

int host_errno_to_fileio(int host_errno) {
  switch (host_errno) {
    case 0: return 0;
    case EPERM: return 1;
    case ENOENT: return 2;
    case EINTR: return 4;
    case EBADF: return 9;
    case EACCES: return 13;
    case EFAULT: return 14;
    case EBUSY: return 16;
    case EEXIST: return 17;
    case ENODEV: return 19;
    case ENOTDIR: return 20;
    case EISDIR: return 21;
    case EINVAL: return 22;
    case ENFILE: return 23;
    case EMFILE: return 24;
    case EFBIG: return 27;
    case ENOSPC: return 28;
    case ESPIPE: return 29;
    case EROFS: return 30;
    case ENAMETOOLONG: return 91;
    default: return 9999;  // FILEIO_EUNKNOWN
  }
}

int fileio_open_flags_to_host(int fileio_flags) {
  constexpr int kKnown = kFileioAccmode | kFileioAppend | kFileioCreat | kFileioTrunc | kFileioExcl;
  // Unknown bits are refused rather than dropped: silently opening with
  // different semantics than the client asked for is worse than EINVAL.
  if ((fileio_flags & ~kKnown) != 0) return -1;
  int host = 0;
  switch (fileio_flags & kFileioAccmode) {
    case kFileioRdonly: host = O_RDONLY; break;
    case kFileioWronly: host = O_WRONLY; break;
    case kFileioRdwr: host = O_RDWR; break;
    default: return -1;
  }
  if (fileio_flags & kFileioAppend) host |= O_APPEND;
  if (fileio_flags & kFileioCreat) host |= O_CREAT;
  if (fileio_flags & kFileioTrunc) host |= O_TRUNC;
  if (fileio_flags & kFileioExcl) host |= O_EXCL;
  return host;
}

}  // namespace protocol
