#include "stub/tracing/perf_bts_reader.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace stub::tracing {

namespace {

constexpr int kMaxAttempts = 4;

struct Record {
  perf_event_header header;
  uint64_t a;  // SAMPLE: ip (from); LOST: id
  uint64_t b;  // SAMPLE: addr (to); LOST: lost count
};
static_assert(sizeof(Record) == kBtsSampleSize);

// Copies ring bytes [begin, end) (positions, not offsets): the part of a
// record past the ring's end continues at its start.
std::vector<uint8_t> copy_ring(const PerfRing& ring, uint64_t begin, uint64_t end) {
  std::vector<uint8_t> out(static_cast<std::size_t>(end - begin));
  std::size_t done = 0;
  while (done < out.size()) {
    uint64_t offset = (begin + done) % ring.size;
    std::size_t chunk = static_cast<std::size_t>(std::min<uint64_t>(ring.size - offset, out.size() - done));
    std::memcpy(out.data() + done, ring.data + offset, chunk);
    done += chunk;
  }
  return out;
}

}  // namespace

uint64_t load_data_head(const perf_event_mmap_page* header) {
  return __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
}

// Copies what was written since the last read, again if data_head moved
// meanwhile; at the last attempt drops the bytes the kernel may have torn.
PerfBtsReader::Snapshot PerfBtsReader::snapshot(const PerfRing& ring) {
  auto head_now = [&] { return ring.load_head ? ring.load_head() : load_data_head(ring.header); };
  // Only whole records can be framed back from head: keep what fits.
  const uint64_t readable = ring.size - ring.size % kBtsSampleSize;
  Snapshot snap;
  for (int attempt = 0;; ++attempt) {
    snap.head = head_now();
    if (snap.head < last_head_) last_head_ = 0;  // the event was reset: all is new
    snap.overflow = snap.head - last_head_ > readable;
    uint64_t begin = snap.overflow ? snap.head - readable : last_head_;
    snap.bytes = copy_ring(ring, begin, snap.head);
    uint64_t after = head_now();
    if (after == snap.head) return snap;
    ++stats_.retries;
    if (attempt + 1 < kMaxAttempts) continue;
    // Bytes older than `after - size` were being overwritten as we copied.
    if (after > ring.size && after - ring.size > begin) {
      uint64_t drop = std::min<uint64_t>(after - ring.size - begin, snap.bytes.size());
      snap.bytes.erase(snap.bytes.begin(), snap.bytes.begin() + static_cast<long>(drop));
      snap.overflow = true;
    }
    return snap;
  }
}

TraceItems PerfBtsReader::read(const PerfRing& ring) {
  ++stats_.reads;
  if (ring.size == 0 || ring.data == nullptr) return {};
  Snapshot snap = snapshot(ring);
  if (snap.overflow) ++stats_.overflows;
  last_head_ = snap.head;

  TraceItems newest_first;
  std::size_t pos = snap.bytes.size();
  bool framed = true;
  for (; pos >= kBtsSampleSize && framed; pos -= kBtsSampleSize) {
    Record r;
    std::memcpy(&r, snap.bytes.data() + pos - kBtsSampleSize, sizeof r);
    if (r.header.size != kBtsSampleSize) {
      framed = false;
    } else if (r.header.type == PERF_RECORD_SAMPLE) {
      if (is_kernel_address(r.a) || is_kernel_address(r.b)) ++stats_.kernel_skipped;
      else newest_first.push_back(branch_item(r.a, r.b));
    } else if (r.header.type == PERF_RECORD_LOST) {
      stats_.lost += r.b;
      push_gap(newest_first);
    } else {
      framed = false;
    }
  }
  // Older records exist that we could not read: that is a gap too.
  if (snap.overflow || !framed || pos != 0) push_gap(newest_first);
  std::reverse(newest_first.begin(), newest_first.end());
  return newest_first;
}

}  // namespace stub::tracing
