#pragma once
// A fake PerfSeam whose "kernel" is memory the test owns: mappings are
// plain buffers, and writers play the kernel's part by putting perf records
// (samples, LOST, AUX) and raw BTS records into them and moving the heads.
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "decoder/block_trace.h"
#include "protocol/amd64_registers.h"
#include "stub/tracing/perf_seam.h"
#include "stub/tracing/perf_trace_items.h"
#include "stub/process/trace_hook.h"

namespace fakeperf {

constexpr std::size_t kPage = 4096;

// A known branch sequence: branch i jumps from the end of block i to the
// start of block i+1, blocks 0x10 bytes apart from `base`.
inline decoder::Branch known_branch(uint64_t i, uint64_t base = 0x401000) {
  return {base + 0x10 * i + 0xb, base + 0x10 * (i + 1)};
}
inline std::vector<decoder::Branch> known_branches(uint64_t first, uint64_t count, uint64_t base = 0x401000) {
  std::vector<decoder::Branch> out;
  for (uint64_t i = first; i < first + count; ++i) out.push_back(known_branch(i, base));
  return out;
}
inline std::vector<decoder::Branch> branches(const decoder::BlockTrace& trace) {
  std::vector<decoder::Branch> out;
  for (uint64_t s = trace.first_sequence(); s < trace.end_sequence(); ++s) out.push_back(trace.at(s));
  return out;
}

// What a reader should produce for `bs`, item for item.
inline stub::tracing::TraceItems items_of(const std::vector<decoder::Branch>& bs) {
  stub::tracing::TraceItems out;
  for (const auto& b : bs) out.push_back(stub::tracing::branch_item(b.from, b.to));
  return out;
}
inline stub::tracing::TraceItems concat(stub::tracing::TraceItems a, const stub::tracing::TraceItems& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Writes `len` bytes at ring position `pos`, wrapping at the ring's end.
inline void ring_write(uint8_t* ring, uint64_t size, uint64_t pos, const void* src, std::size_t len) {
  const auto* in = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < len; ++i) ring[(pos + i) % size] = in[i];
}

// The kernel side of a perf data ring (overwrite mode: never waits).
struct RingWriter {
  perf_event_mmap_page* header;
  uint8_t* data;
  uint64_t size;

  void record(uint32_t type, uint16_t misc, uint64_t a, uint64_t b) {
    perf_event_header h{type, misc, 24};
    uint64_t head = header->data_head;
    ring_write(data, size, head, &h, sizeof h);
    ring_write(data, size, head + 8, &a, 8);
    ring_write(data, size, head + 16, &b, 8);
    header->data_head = head + 24;
  }
  void sample(const decoder::Branch& b) { record(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, b.from, b.to); }
  void samples(const std::vector<decoder::Branch>& bs) {
    for (const auto& b : bs) sample(b);
  }
  void lost(uint64_t count) { record(PERF_RECORD_LOST, 0, 7, count); }
  // Any record of `size` bytes (e.g. PERF_RECORD_THROTTLE).
  void other(uint32_t type, uint16_t size) {
    std::vector<uint8_t> bytes(size, 0xcc);
    perf_event_header h{type, 0, size};
    std::memcpy(bytes.data(), &h, sizeof h);
    ring_write(data, this->size, header->data_head, bytes.data(), bytes.size());
    header->data_head += size;
  }
  // An AUX record announcing [offset, offset + len) with `flags`.
  void aux(uint64_t offset, uint64_t len, uint64_t flags) {
    perf_event_header h{PERF_RECORD_AUX, 0, 32};
    uint64_t body[3] = {offset, len, flags};
    ring_write(data, size, header->data_head, &h, sizeof h);
    ring_write(data, size, header->data_head + 8, body, sizeof body);
    header->data_head += 32;
  }
};

// The CPU side of an AUX area: raw BTS records (or any bytes: a PT stream)
// at aux position `head`.
struct AuxWriter {
  uint8_t* aux;
  uint64_t size;
  uint64_t head = 0;
  uint64_t write(const std::vector<decoder::Branch>& bs) {
    uint64_t start = head;
    for (const auto& b : bs) {
      uint64_t rec[3] = {b.from, b.to, 0x10};
      ring_write(aux, size, head, rec, sizeof rec);
      head += 24;
    }
    return head - start;
  }
  uint64_t write_bytes(const std::vector<uint8_t>& bytes) {
    ring_write(aux, size, head, bytes.data(), bytes.size());
    head += bytes.size();
    return bytes.size();
  }
};

// Page-aligned zeroed storage.
struct Buffer {
  explicit Buffer(std::size_t n) : bytes(new (std::align_val_t(kPage)) uint8_t[n]()), length(n) {}
  ~Buffer() { operator delete[](bytes, std::align_val_t(kPage)); }
  uint8_t* bytes;
  std::size_t length;
};

class FakePerfSeam final : public stub::tracing::PerfSeam {
 public:
  struct Event {
    perf_event_attr attr{};
    pid_t tid = 0;
    bool open = true;
    std::shared_ptr<Buffer> ring;  // header page + data
    std::shared_ptr<Buffer> aux;
    bool ring_writable = false;
  };

  // ---- what the test sets ----
  std::map<uint32_t, int> open_errno_by_type;  // attr.type -> errno
  std::function<int(std::size_t length, std::size_t offset)> map_errno;  // 0: succeed
  std::map<std::string, std::string> files;
  std::map<uint32_t, std::array<uint32_t, 4>> cpuid_leaves;
  std::optional<uint64_t> memlock = uint64_t{8} << 20;

  // ---- what the test inspects ----
  std::map<int, Event> events;
  std::set<void*> live_mappings;
  std::vector<std::size_t> map_lengths;  // every attempt

  stub::tracing::SeamResult<int> open_event(const perf_event_attr& attr, pid_t tid) override {
    auto it = open_errno_by_type.find(attr.type);
    if (it != open_errno_by_type.end()) return {std::nullopt, {it->second, "perf_event_open"}};
    int fd = next_fd_++;
    events[fd] = Event{attr, tid, true, nullptr, nullptr, false};
    return {fd, {}};
  }
  void close_event(int fd) override { events.at(fd).open = false; }
  stub::tracing::SeamResult<void*> map(int fd, std::size_t length, std::size_t offset, bool writable) override {
    map_lengths.push_back(length);
    if (map_errno) {
      if (int err = map_errno(length, offset)) return {std::nullopt, {err, "mmap"}};
    }
    Event& e = events.at(fd);
    auto buffer = std::make_shared<Buffer>(length);
    if (offset == 0) {
      if (length < 2 * kPage || ((length / kPage - 1) & (length / kPage - 2)) != 0) return {std::nullopt, {EINVAL, "mmap"}};
      e.ring = buffer;
      e.ring_writable = writable;
    } else {
      auto* header = reinterpret_cast<perf_event_mmap_page*>(e.ring->bytes);
      if (header->aux_offset != offset || header->aux_size != length) return {std::nullopt, {EINVAL, "mmap"}};
      e.aux = buffer;
    }
    live_mappings.insert(buffer->bytes);
    return {buffer->bytes, {}};
  }
  void unmap(void* addr, std::size_t) override { live_mappings.erase(addr); }
  stub::tracing::SeamResult<int> set_enabled(int, bool) override { return {0, {}}; }
  std::optional<std::string> read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  std::array<uint32_t, 4> cpuid(uint32_t leaf, uint32_t) override {
    auto it = cpuid_leaves.find(leaf);
    return it == cpuid_leaves.end() ? std::array<uint32_t, 4>{} : it->second;
  }
  std::optional<uint64_t> memlock_limit() override { return memlock; }
  std::size_t page_size() override { return kPage; }

  // The kernel side of an event's buffers.
  RingWriter ring_writer(int fd) {
    Event& e = events.at(fd);
    return RingWriter{reinterpret_cast<perf_event_mmap_page*>(e.ring->bytes), e.ring->bytes + kPage,
                      e.ring->length - kPage};
  }
  AuxWriter aux_writer(int fd) {
    Event& e = events.at(fd);
    return AuxWriter{e.aux->bytes, e.aux->length};
  }
  std::size_t open_events() const {
    std::size_t n = 0;
    for (const auto& [fd, e] : events) n += e.open;
    return n;
  }

 private:
  int next_fd_ = 100;
};

// cpuid leaves 0 and 1 for a vendor ("GenuineIntel") and family 6 model 0x55.
inline void set_cpu(FakePerfSeam& seam, const char* vendor, uint32_t leaf1_eax = 0x00050654,
                    uint32_t leaf1_edx = 1u << 21) {
  std::array<uint32_t, 4> l0{0x16, 0, 0, 0};
  std::memcpy(&l0[1], vendor, 4);
  std::memcpy(&l0[3], vendor + 4, 4);
  std::memcpy(&l0[2], vendor + 8, 4);
  seam.cpuid_leaves[0] = l0;
  seam.cpuid_leaves[1] = {leaf1_eax, 0, 0, leaf1_edx};
}

// Just enough process layer: each thread's pc, and code at `code_base`
// (a PT trace is decoded against it; zeros around it in its pages).
class PcControl final : public stub::process::TracedThreadControl {
 public:
  std::map<pid_t, uint64_t> pc;
  uint64_t code_base = 0;
  std::vector<uint8_t> code;
  btstub::Expected<protocol::RegisterFile> read_registers(pid_t tid) override {
    auto it = pc.find(tid);
    if (it == pc.end()) return btstub::make_error(btstub::ErrorCode::NoProcess, "no such thread");
    protocol::RegisterFile regs;
    regs.set_u64(protocol::Amd64Reg::rip, it->second);
    return regs;
  }
  btstub::Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) override {
    if (code.empty() || addr >= code_base + code.size() || addr + len <= code_base) {
      return btstub::make_error(btstub::ErrorCode::MemoryFault, "unmapped");
    }
    std::vector<uint8_t> out(len, 0);
    for (std::size_t i = 0; i < len; ++i) {
      if (addr + i >= code_base && addr + i < code_base + code.size()) out[i] = code[addr + i - code_base];
    }
    return out;
  }
  bool has_user_breakpoint(uint64_t) const override { return false; }
  btstub::Expected<void> set_trace_stop(pid_t, std::optional<uint64_t>) override { return {}; }
};

}  // namespace fakeperf
