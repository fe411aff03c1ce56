#pragma once
// The thin seam between the hardware trace backends and the kernel:
// perf_event_open, mmap/munmap, ioctl, close, sysfs/procfs files, cpuid and
// RLIMIT_MEMLOCK. PerfSeamLinux (perf_seam_linux.cc) is the only code that
// makes these calls; tests hand the backends a fake whose "kernel" is memory
// the test writes, so the backends run end to end without BTS hardware.
#include <linux/perf_event.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "protocol/expected.h"

namespace stub::tracing {

using btstub::Expected;

// A failed call: errno and what was being done ("perf_event_open(BTS)").
struct SeamError {
  int err = 0;
  std::string what;
};

template <class T>
struct SeamResult {
  std::optional<T> value;
  SeamError error;  // meaningful when !value
  explicit operator bool() const { return value.has_value(); }
};

class PerfSeam {
 public:
  virtual ~PerfSeam() = default;
  // perf_event_open(attr, tid, cpu -1, no group, PERF_FLAG_FD_CLOEXEC).
  // tid 0 is the calling thread.
  virtual SeamResult<int> open_event(const perf_event_attr& attr, pid_t tid) = 0;
  virtual void close_event(int fd) = 0;
  // mmap(NULL, length, PROT_READ[|PROT_WRITE], MAP_SHARED, fd, offset).
  virtual SeamResult<void*> map(int fd, std::size_t length, std::size_t offset, bool writable) = 0;
  virtual void unmap(void* addr, std::size_t length) = 0;
  // ioctl(fd, PERF_EVENT_IOC_ENABLE / _DISABLE, 0).
  virtual SeamResult<int> set_enabled(int fd, bool enabled) = 0;
  // A whole small file (sysfs, /proc/sys); nullopt when unreadable.
  virtual std::optional<std::string> read_file(const std::string& path) = 0;
  // cpuid(leaf, subleaf): eax, ebx, ecx, edx.
  virtual std::array<uint32_t, 4> cpuid(uint32_t leaf, uint32_t subleaf) = 0;
  // RLIMIT_MEMLOCK's soft limit in bytes; nullopt when unlimited.
  virtual std::optional<uint64_t> memlock_limit() = 0;
  virtual std::size_t page_size() = 0;
};

// The real one.
std::unique_ptr<PerfSeam> make_linux_perf_seam();

// "No such device" for ENODEV etc.
std::string errno_text(int err);

}  // namespace stub::tracing
