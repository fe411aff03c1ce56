// The real PerfSeam: the only file that calls perf_event_open, mmap on perf
// events and the perf ioctls.
#include <cpuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "stub/tracing/perf_seam.h"

namespace stub::tracing {

namespace {

class LinuxPerfSeam final : public PerfSeam {
 public:
  SeamResult<int> open_event(const perf_event_attr& attr, pid_t tid) override {
    long fd = ::syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return {std::nullopt, {errno, "perf_event_open"}};
    return {static_cast<int>(fd), {}};
  }
  void close_event(int fd) override { ::close(fd); }
  SeamResult<void*> map(int fd, std::size_t length, std::size_t offset, bool writable) override {
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    void* p = ::mmap(nullptr, length, prot, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return {std::nullopt, {errno, "mmap"}};
    return {p, {}};
  }
  void unmap(void* addr, std::size_t length) override { ::munmap(addr, length); }
  SeamResult<int> set_enabled(int fd, bool enabled) override {
    if (::ioctl(fd, enabled ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) != 0) {
      return {std::nullopt, {errno, "ioctl"}};
    }
    return {0, {}};
  }
  std::optional<std::string> read_file(const std::string& path) override {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return std::nullopt;
    return text.str();
  }
  std::array<uint32_t, 4> cpuid(uint32_t leaf, uint32_t subleaf) override {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(leaf, subleaf, &a, &b, &c, &d) == 0) return {0, 0, 0, 0};
    return {a, b, c, d};
  }
  std::optional<uint64_t> memlock_limit() override {
    rlimit limit{};
    if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
    return static_cast<uint64_t>(limit.rlim_cur);
  }
  std::size_t page_size() override { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
};

}  // namespace

std::unique_ptr<PerfSeam> make_linux_perf_seam() { return std::make_unique<LinuxPerfSeam>(); }

}  // namespace stub::tracing
