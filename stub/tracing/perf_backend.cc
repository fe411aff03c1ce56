#include "stub/tracing/perf_backend.h"

#include <cerrno>
#include <cstring>

#include "protocol/amd64_registers.h"
#include "stub/tracing/thread_code.h"

namespace stub::tracing {

namespace {

using btstub::ErrorCode;
using btstub::make_error;

// The data ring beside an AUX area carries only PERF_RECORD_AUX/LOST.
constexpr std::size_t kIntelDataPages = 4;

std::size_t round_up_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

std::size_t round_down_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p * 2 <= n) p <<= 1;
  return p;
}

bool limit_error(int err) { return err == EPERM || err == ENOMEM; }

std::optional<uint64_t> read_number(PerfSeam& seam, const std::string& path) {
  auto text = seam.read_file(path);
  if (!text) return std::nullopt;
  try {
    return std::stoull(*text);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

perf_event_attr perf_bts_attr() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
  attr.sample_period = 1;  // every branch: the kernel uses BTS for exactly this
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.exclude_idle = 1;
  return attr;
}

perf_event_attr intel_bts_attr(uint32_t pmu_type) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = pmu_type;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return attr;
}

// The kernel's intel_pt driver (arch/x86/events/intel/pt.c) documents its
// config bits as sysfs format attributes (.../intel_pt/format/*), which are
// IA32_RTIT_CTL's: pt = config:0, branch = config:13 (BranchEn). pt_config()
// there says: with bit 0 set, BranchEn is taken from attr.config instead of
// being forced on, so we set both and ask for branch tracing in so many
// words. Everything else stays off (no cyc/mtc/tsc timing packets: only the
// control flow is wanted), and return compression stays on (libipt undoes
// it). psb_period (config:24-27) stays 0: perf's intel-pt documentation
// gives the period as 2^(value + 11) bytes and says 0 is always supported,
// so a PSB comes every 2 KiB, which bounds what decoder/pt_decoder keeps
// and decodes again between reads.
// User space only: exclude_kernel, as for intel_bts (pt_config() sets
// RTIT_CTL_OS only without it).
constexpr uint64_t kIntelPtConfigPt = uint64_t{1} << 0;
constexpr uint64_t kIntelPtConfigBranch = uint64_t{1} << 13;

perf_event_attr intel_pt_attr(uint32_t pmu_type) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = pmu_type;
  attr.config = kIntelPtConfigPt | kIntelPtConfigBranch;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return attr;
}

std::size_t plan_buffer_pages(uint64_t bytes, std::size_t page_size, std::optional<uint64_t> mlock_kb,
                              std::optional<uint64_t> memlock_limit) {
  if (page_size == 0) return 1;
  std::size_t pages = round_up_pow2(static_cast<std::size_t>(std::max<uint64_t>((bytes + page_size - 1) / page_size, 1)));
  if (mlock_kb && memlock_limit) {
    uint64_t allowance = *mlock_kb * 1024 + *memlock_limit;
    std::size_t fit = static_cast<std::size_t>(allowance / page_size);
    fit = fit > 1 ? fit - 1 : 1;  // the header page counts too
    pages = std::min(pages, round_down_pow2(fit));
  }
  return pages;
}

PerfBackend::PerfBackend(PerfSeam& seam, const Options& options)
    : seam_(seam), options_(options), config_(options.config), all_enabled_(options.enable_all) {}

PerfBackend::~PerfBackend() {
  for (auto& [tid, t] : threads_) close_event(t);
}

std::string_view PerfBackend::name() const {
  switch (options_.kind) {
    case HardwareTrace::PerfBts: return "perf-bts";
    case HardwareTrace::IntelBts: return "intel-bts";
    case HardwareTrace::IntelPt: return "intel-pt";
  }
  return "?";
}

std::string PerfBackend::prefix(pid_t tid) const {
  return std::string(name()) + ": thread " + std::to_string(tid) + ": ";
}

int PerfBackend::event_fd(pid_t tid) const {
  auto it = threads_.find(tid);
  return it == threads_.end() ? -1 : it->second.fd;
}

// Maps `pages` (a power of two) plus `extra_pages`; when the locked-memory
// allowance refuses, halves the buffer (at most down to what the limits
// allow, then on to one page) as gdb does.
Expected<PerfBackend::Mapping> PerfBackend::map_halving(int fd, std::size_t pages, std::size_t extra_pages,
                                                        std::size_t offset, bool writable, const char* what,
                                                        pid_t tid, __u64* size_field) {
  const std::size_t page = seam_.page_size();
  auto mlock_kb = read_number(seam_, "/proc/sys/kernel/perf_event_mlock_kb");
  auto memlock = seam_.memlock_limit();
  std::size_t cap = plan_buffer_pages(uint64_t{pages} * page, page, mlock_kb, memlock);
  for (;;) {
    std::size_t length = (pages + extra_pages) * page;
    if (size_field != nullptr) __atomic_store_n(size_field, __u64{length}, __ATOMIC_RELEASE);
    auto mapped = seam_.map(fd, length, offset, writable);
    if (mapped) return Mapping{*mapped.value, length};
    if (!limit_error(mapped.error.err) || pages == 1) {
      std::string limits = " (perf_event_mlock_kb=" + (mlock_kb ? std::to_string(*mlock_kb) : std::string("?")) +
                           ", RLIMIT_MEMLOCK=" + (memlock ? std::to_string(*memlock) : std::string("unlimited")) + ")";
      return make_error(ErrorCode::IoError, prefix(tid) + "cannot map the " + what + " of " +
                                                std::to_string(length) + " bytes: " + errno_text(mapped.error.err) +
                                                limits + "; the thread runs untraced");
    }
    pages = std::min(pages / 2, std::max<std::size_t>(cap, 1));
  }
}

Expected<void> PerfBackend::open_event(Thread& t, pid_t tid) {
  bool intel = uses_aux();
  perf_event_attr attr = options_.kind == HardwareTrace::IntelPt    ? intel_pt_attr(options_.intel_pt_type)
                         : options_.kind == HardwareTrace::IntelBts ? intel_bts_attr(options_.intel_bts_type)
                                                                    : perf_bts_attr();
  auto fd = seam_.open_event(attr, tid);
  if (!fd) {
    return make_error(ErrorCode::NotSupported,
                      prefix(tid) + "perf_event_open failed: " + errno_text(fd.error.err));
  }
  t.fd = *fd.value;
  const std::size_t page = seam_.page_size();
  std::size_t pages = plan_buffer_pages(config_.buffer_bytes, page, std::nullopt, std::nullopt);
  auto ring = intel ? map_halving(t.fd, kIntelDataPages, 1, 0, true, "data ring", tid)
                    : map_halving(t.fd, pages, 1, 0, false, "sample ring", tid);
  if (!ring) {
    close_event(t);
    return ring.error();
  }
  t.ring = *ring;
  uint64_t mapped_bytes = t.ring.length - page;
  if (intel) {
    auto* header = static_cast<perf_event_mmap_page*>(t.ring.addr);
    header->aux_offset = t.ring.length;
    auto aux = map_halving(t.fd, pages, 0, t.ring.length, true, "AUX area", tid, &header->aux_size);
    if (!aux) {
      close_event(t);
      return aux.error();
    }
    t.aux = *aux;
    mapped_bytes = t.aux.length;
  }
  t.config = config_;
  t.config.buffer_bytes = mapped_bytes;
  return {};
}

void PerfBackend::close_event(Thread& t) {
  if (t.aux.addr != nullptr) seam_.unmap(t.aux.addr, t.aux.length);
  if (t.ring.addr != nullptr) seam_.unmap(t.ring.addr, t.ring.length);
  if (t.fd >= 0) seam_.close_event(t.fd);
  t.aux = {};
  t.ring = {};
  t.fd = -1;
}

Expected<void> PerfBackend::start(Thread& t, pid_t tid, bool stopped) {
  close_event(t);
  t.perf_reader = PerfBtsReader{};
  t.intel_reader = IntelBtsReader{};
  t.pt_reader = IntelPtReader{};
  t.pt_decoder = decoder::PtStreamDecoder{};
  if (auto opened = open_event(t, tid); !opened) {
    t.enabled = false;
    last_error_ = opened.error().message;
    return opened;
  }
  t.enabled = true;
  t.exited = false;
  t.origin_known = false;
  // The store holds what was asked for: reads accumulate in it.
  t.trace = std::make_unique<decoder::BlockTrace>(0, decoder::bts_records_for_bytes(config_.buffer_bytes),
                                                  decoder::OverflowPolicy::DropOldest);
  t.trace->set_code(std::make_shared<LiveCode>(&control_));  // PT chunks
  if (stopped) learn_origin(t, tid, control_);
  return {};
}

void PerfBackend::learn_origin(Thread& t, pid_t tid, TracedThreadControl* control) {
  if (t.origin_known || !t.trace || control == nullptr || t.trace->end_sequence() != 0) return;
  auto regs = control->read_general_registers(tid);
  if (!regs) return;
  t.trace->clear(regs->get_u64(protocol::Amd64Reg::rip));
  t.pt_decoder.set_origin(regs->get_u64(protocol::Amd64Reg::rip));
  t.origin_known = true;
}

void PerfBackend::refresh(Thread& t) const {
  if (t.fd < 0 || !t.trace || t.ring.addr == nullptr) return;
  const std::size_t page = seam_.page_size();
  auto* header = static_cast<perf_event_mmap_page*>(t.ring.addr);
  auto* data = static_cast<const uint8_t*>(t.ring.addr) + page;
  TraceItems items;
  if (options_.kind == HardwareTrace::IntelPt) {
    AuxBuffers buffers{header, data, t.ring.length - page, static_cast<const uint8_t*>(t.aux.addr), t.aux.length, {}};
    auto pieces = t.pt_reader.read(buffers);
    if (pieces.empty()) return;
    // The thread is stopped (the trace is asked for between stops): its
    // code is what ran, unless it rewrote it (then decoding finds a gap).
    ThreadCode code(control_);
    // Clean segments: their packets go into the store as the CPU wrote
    // them (when they decode to their branches there), in stream order,
    // also those whose first branches an earlier stop handed out.
    std::vector<decoder::PtWholeSegment> segments;
    const std::vector<decoder::PtItem> decoded = t.pt_decoder.decode(pieces, code, &segments);
    std::size_t next_segment = 0;
    for (std::size_t i = 0; i <= decoded.size(); ++i) {
      for (; next_segment < segments.size() && segments[next_segment].at == i; ++next_segment) {
        append_items(*t.trace, items);
        items.clear();
        const decoder::PtWholeSegment& segment = segments[next_segment];
        t.trace->append_pt_segment(segment.packets, segment.branches, nullptr, segment.handed_out);
      }
      if (i == decoded.size()) break;
      const decoder::PtItem& item = decoded[i];
      items.push_back(item.gap ? gap_item(item.branch.to) : branch_item(item.branch.from, item.branch.to));
    }
    append_items(*t.trace, items);
    items.clear();
    // What the open segment handed out now are the newest branches: kept
    // unsealed, so that the segment, once complete, can take their place.
    const std::size_t held = t.pt_decoder.open_handed_out();
    t.trace->hold_open(held > 0 && held <= t.trace->size() ? std::optional<uint64_t>(t.trace->end_sequence() - held)
                                                           : std::nullopt);
  } else if (options_.kind == HardwareTrace::IntelBts) {
    IntelBtsBuffers buffers{header, data, t.ring.length - page, static_cast<const uint8_t*>(t.aux.addr),
                            t.aux.length, {}};
    items = t.intel_reader.read(buffers);
  } else {
    items = t.perf_reader.read(PerfRing{header, data, t.ring.length - page, {}});
  }
  append_items(*t.trace, items);
}

PerfBackend::Thread* PerfBackend::lazy_state(pid_t tid) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return &it->second;
  if (!all_enabled_) return nullptr;
  Thread& t = threads_[tid];
  (void)start(t, tid, false);  // on failure: known, untraced (last_error says why)
  return &t;
}

}  // namespace stub::tracing
