#include "stub/process/proc_maps.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include "stub/process/page_size.h"

namespace stub::process {

std::vector<MemoryMapping> parse_maps(const std::string& text) {
  std::vector<MemoryMapping> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    unsigned long long begin = 0, end = 0, inode = 0, offset = 0;
    unsigned major = 0, minor = 0;
    char perms[5] = {};
    int name_at = 0;
    // Fields: range perms offset dev inode [name]; the name may hold spaces.
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %llx %x:%x %llu %n", &begin, &end, perms, &offset, &major, &minor,
                    &inode, &name_at) != 7 ||
        begin >= end) {
      continue;
    }
    std::string name = name_at > 0 ? line.substr(static_cast<std::size_t>(name_at)) : std::string();
    out.push_back({begin, end, perms[0] == 'r', perms[1] == 'w', perms[2] == 'x', perms[3] == 's',
                   line.find("[stack]") != std::string::npos, std::move(name), inode, offset,
                   uint64_t{major} << 32 | minor});
  }
  return out;
}

std::optional<uint64_t> free_page_near(const std::vector<MemoryMapping>& maps, uint64_t address, uint64_t reach,
                                       uint64_t page_size) {
  // vm.mmap_min_addr's usual value, and the top of user space.
  constexpr uint64_t kLowest = 0x10000;
  constexpr uint64_t kHighest = 0x7ffffffff000;
  const uint64_t low = address > reach + kLowest ? address - reach : kLowest;
  const uint64_t high = address < kHighest - reach ? address + reach : kHighest;
  std::optional<uint64_t> best;
  auto distance = [&](uint64_t page) { return page > address ? page - address : address - page; };
  auto consider = [&](uint64_t page) {
    if (page < low || page + page_size > high) return;
    if (!best || distance(page) < distance(*best)) best = page;
  };
  uint64_t gap_begin = kLowest;
  for (std::size_t i = 0; i <= maps.size(); ++i) {
    const bool last = i == maps.size();
    const uint64_t gap_end = last ? kHighest : maps[i].begin;
    const uint64_t first = (gap_begin + page_size - 1) / page_size * page_size;
    const uint64_t final_page = gap_end / page_size * page_size;  // one past
    if (first + page_size <= final_page && (last || !maps[i].stack)) {
      consider(first);
      consider(final_page - page_size);
      // And the gap's page nearest `address` (address itself, when the gap
      // holds it).
      const uint64_t aligned = address / page_size * page_size;
      consider(std::clamp(aligned, first, final_page - page_size));
    }
    if (!last) gap_begin = std::max(gap_begin, maps[i].end);
  }
  return best;
}

namespace {

// PROCMAP_QUERY's ABI (include/uapi/linux/fs.h), which older headers lack.
struct ProcmapQuery {
  uint64_t size;
  uint64_t query_flags;
  uint64_t query_addr;
  uint64_t vma_start;
  uint64_t vma_end;
  uint64_t vma_flags;
  uint64_t vma_page_size;
  uint64_t vma_offset;
  uint64_t inode;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint32_t vma_name_size;
  uint32_t build_id_size;
  uint64_t vma_name_addr;
  uint64_t build_id_addr;
};
constexpr uint64_t kQueryReadable = 0x01, kQueryWritable = 0x02, kQueryExecutable = 0x04, kQueryShared = 0x08;
constexpr uint64_t kQueryCoveringOrNext = 0x10;
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
static_assert(sizeof(ProcmapQuery) == 104 && kProcmapQuery == 0xc0686611);

// nullopt: this kernel does not answer PROCMAP_QUERY.
std::optional<std::vector<MemoryMapping>> query_shared(int fd) {
  std::vector<MemoryMapping> out;
  uint64_t from = 0;
  for (;;) {
    ProcmapQuery q{};
    q.size = sizeof q;
    q.query_flags = kQueryCoveringOrNext | kQueryShared;
    q.query_addr = from;
    if (::ioctl(fd, kProcmapQuery, &q) != 0) {
      if (errno == ENOENT) return out;  // none further up
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (q.vma_end <= from) return std::nullopt;  // not moving on: not trusted
    out.push_back({q.vma_start, q.vma_end, (q.vma_flags & kQueryReadable) != 0, (q.vma_flags & kQueryWritable) != 0,
                   (q.vma_flags & kQueryExecutable) != 0, (q.vma_flags & kQueryShared) != 0, false, {}, q.inode,
                   q.vma_offset, uint64_t{q.dev_major} << 32 | q.dev_minor});
    from = q.vma_end;
  }
}

}  // namespace

std::optional<std::vector<MemoryMapping>> query_shared_maps(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto queried = query_shared(fd);
  ::close(fd);
  return queried;
}

std::optional<std::vector<MemoryMapping>> read_shared_maps(pid_t pid) {
  if (auto queried = query_shared_maps(pid)) return queried;
  std::vector<MemoryMapping> all = read_maps(pid);
  if (all.empty()) return std::nullopt;
  std::vector<MemoryMapping> shared;
  for (MemoryMapping& m : all) {
    if (m.shared) shared.push_back(std::move(m));
  }
  return shared;
}

bool mapped_file_changed_after(pid_t pid, const MemoryMapping& m, int64_t since_ns) {
  constexpr int64_t kSlackNs = 20'000'000;
  if (m.inode == 0) return false;
  // The mapped file itself (also when deleted, or a memfd) where /proc lets
  // us; else the file under its name, when that is still the mapped one.
  char entry[96];
  std::snprintf(entry, sizeof entry, "/proc/%d/map_files/%llx-%llx", static_cast<int>(pid),
                static_cast<unsigned long long>(m.begin), static_cast<unsigned long long>(m.end));
  struct stat st {};
  if (::stat(entry, &st) != 0 || st.st_ino != m.inode) {
    if (m.name.empty() || m.name.front() != '/' || ::stat(m.name.c_str(), &st) != 0 || st.st_ino != m.inode) {
      return true;  // cannot be asked: it may have changed
    }
  }
  const int64_t changed_ns = nanoseconds(st.st_ctim);
  return changed_ns > since_ns - kSlackNs;
}

std::set<uint64_t> shared_writable_files(const std::vector<MemoryMapping>& maps) {
  std::set<uint64_t> out;
  for (const MemoryMapping& m : maps) {
    if (m.shared && m.writable && m.inode != 0) out.insert(m.inode);
  }
  return out;
}

std::optional<int64_t> process_start_realtime_ns(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // Fields after the name start at the state (field 3); starttime is 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  long long ticks = 0;
  if (std::from_chars(field.data(), field.data() + field.size(), ticks).ec != std::errc{}) return std::nullopt;
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) return std::nullopt;
  timespec boot{}, real{};
  ::clock_gettime(CLOCK_BOOTTIME, &boot);
  ::clock_gettime(CLOCK_REALTIME, &real);
  const int64_t started_after_boot_ns = static_cast<int64_t>(ticks) * (1'000'000'000 / ticks_per_second);
  const int64_t boot_ns = nanoseconds(boot);
  const int64_t real_ns = nanoseconds(real);
  return real_ns - (boot_ns - started_after_boot_ns);
}

std::optional<bool> page_holds_file_bytes(pid_t pid, uint64_t addr) {
  constexpr uint64_t kPresent = uint64_t{1} << 63;
  constexpr uint64_t kSwapped = uint64_t{1} << 62;
  constexpr uint64_t kFilePage = uint64_t{1} << 61;  // or shared anonymous memory
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  uint64_t entry = 0;
  const ssize_t got = ::pread(fd, &entry, sizeof entry, static_cast<off_t>((addr / kPageSize) * sizeof entry));
  ::close(fd);
  if (got != static_cast<ssize_t>(sizeof entry)) return std::nullopt;
  if ((entry & kSwapped) != 0) return false;
  return (entry & kPresent) == 0 || (entry & kFilePage) != 0;
}

std::vector<MemoryMapping> read_maps(pid_t pid) { return parse_maps(read_maps_text(pid).value_or("")); }

std::optional<std::string> read_maps_text(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::stringstream text;
  text << in.rdbuf();
  std::string maps = std::move(text).str();
  if (maps.empty()) return std::nullopt;
  return maps;
}

}  // namespace stub::process
