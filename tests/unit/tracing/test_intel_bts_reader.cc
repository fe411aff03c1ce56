// The intel_bts reader against AUX areas and data rings built here: raw
// 24-byte BTS records from known branch sequences, PERF_RECORD_AUX chunks
// with their flags, PERF_RECORD_LOST.
#include <catch2/catch.hpp>

#include "fake_perf_seam.h"
#include "stub/tracing/intel_bts_reader.h"

namespace test_intel_bts_reader {  // this file's own names, apart in a unity build

using decoder::Branch;
using fakeperf::concat;
using fakeperf::items_of;
using fakeperf::known_branches;
using stub::tracing::TraceItems;

namespace {

// AUX of 256 bytes (records wrap at its edge) and a 128-byte data ring
// (32-byte AUX records split at its edge too).
struct Buffers {
  perf_event_mmap_page header{};
  alignas(8) uint8_t data[128] = {};
  alignas(8) uint8_t aux[256] = {};
  fakeperf::RingWriter ring{&header, data, sizeof data};
  fakeperf::AuxWriter cpu{aux, sizeof aux};
  stub::tracing::IntelBtsBuffers view() {
    return stub::tracing::IntelBtsBuffers{&header, data, sizeof data, aux, sizeof aux, {}};
  }

  // The CPU writes `bs`, the kernel announces them.
  void chunk(const std::vector<Branch>& bs, uint64_t flags = 0) {
    uint64_t offset = cpu.head;
    uint64_t size = cpu.write(bs);
    ring.aux(offset, size, flags);
  }
};

const TraceItems kGap{stub::tracing::gap_item()};

}  // namespace

TEST_CASE("intel_bts: empty, partial, and tails handed back for delta reads") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  REQUIRE(reader.read(v).empty());
  b.chunk(known_branches(0, 3));
  REQUIRE(reader.read(v) == items_of(known_branches(0, 3)));
  REQUIRE(b.header.data_tail == b.header.data_head);
  REQUIRE(b.header.aux_tail == 72);
  REQUIRE(reader.read(v).empty());
  b.chunk(known_branches(3, 2));
  REQUIRE(reader.read(v) == items_of(known_branches(3, 2)));
  REQUIRE(b.header.aux_tail == 120);
}

TEST_CASE("intel_bts: an exactly full AUX area with the driver's zero padding") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  b.cpu.write(known_branches(0, 10));  // 240 bytes, then 16 bytes of zero pad
  b.ring.aux(0, 256, 0);
  REQUIRE(reader.read(v) == items_of(known_branches(0, 10)));
  // Delta after full: the next chunk starts at 256 = offset 0 again.
  b.cpu.head = 256;
  b.chunk(known_branches(10, 2));
  REQUIRE(reader.read(v) == items_of(known_branches(10, 2)));
}

TEST_CASE("intel_bts: AUX wrap-around, records split at the AUX and data edges") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  b.chunk(known_branches(0, 9));  // to 216
  REQUIRE(reader.read(v).size() == 9);
  b.chunk(known_branches(9, 4));  // 216..312: record 10 spans the AUX edge
  REQUIRE(reader.read(v) == items_of(known_branches(9, 4)));
  // Data ring: each AUX record is 32 bytes; push heads so one spans the edge.
  for (uint64_t i = 13; i < 20; ++i) {
    b.chunk(known_branches(i, 1));
    REQUIRE(reader.read(v) == items_of(known_branches(i, 1)));
  }
  REQUIRE(b.header.data_head > sizeof b.data);
  REQUIRE(b.header.data_head == 288);
  b.ring.other(PERF_RECORD_ITRACE_START, 80);  // a record of another kind, skipped...
  b.chunk(known_branches(20, 2));  // ...so this AUX record spans [368, 400): the ring's edge at 384
  REQUIRE(reader.read(v) == items_of(known_branches(20, 2)));
}

TEST_CASE("intel_bts: a TRUNCATED chunk ends in a gap; the next chunk is delta-read") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  b.chunk(known_branches(0, 4), PERF_AUX_FLAG_TRUNCATED);
  b.chunk(known_branches(9, 2));
  REQUIRE(reader.read(v) == concat(concat(items_of(known_branches(0, 4)), kGap), items_of(known_branches(9, 2))));
  REQUIRE(reader.stats().truncated == 1);
  b.chunk(known_branches(11, 1), PERF_AUX_FLAG_TRUNCATED);
  REQUIRE(reader.read(v) == concat(items_of(known_branches(11, 1)), kGap));
  b.chunk(known_branches(15, 1));
  REQUIRE(reader.read(v) == items_of(known_branches(15, 1)));
}

TEST_CASE("intel_bts: overwritten or partial chunks and PERF_RECORD_LOST are gaps") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  b.chunk(known_branches(0, 2));
  b.chunk(known_branches(5, 2), PERF_AUX_FLAG_OVERWRITE);
  REQUIRE(reader.read(v) == concat(concat(items_of(known_branches(0, 2)), kGap), items_of(known_branches(5, 2))));
  b.chunk(known_branches(7, 1));
  b.ring.lost(3);
  b.chunk(known_branches(12, 1), PERF_AUX_FLAG_PARTIAL);
  REQUIRE(reader.read(v) == concat(concat(items_of(known_branches(7, 1)), kGap), items_of(known_branches(12, 1))));
  REQUIRE(reader.stats().lost == 3);
  b.chunk(known_branches(13, 1));
  REQUIRE(reader.read(v) == items_of(known_branches(13, 1)));
}

TEST_CASE("intel_bts: AUX bytes never announced are a gap") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  b.chunk(known_branches(0, 1));
  b.cpu.write(known_branches(1, 2));  // written, never announced
  b.chunk(known_branches(3, 1));
  REQUIRE(reader.read(v) == concat(concat(items_of(known_branches(0, 1)), kGap), items_of(known_branches(3, 1))));
  REQUIRE(reader.stats().skipped_bytes == 48);
}

TEST_CASE("intel_bts: kernel addresses are skipped") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  auto user = known_branches(0, 2);
  b.chunk({user[0], Branch{0xffffffff81000000, user[1].from}, user[1], Branch{0x401000, 0xffffffffa0000000}});
  REQUIRE(reader.read(v) == items_of(user));
  REQUIRE(reader.stats().kernel_skipped == 2);
  b.chunk({Branch{0xffff888000000000, 0x401000}});
  REQUIRE(reader.read(v).empty());
}

TEST_CASE("intel_bts: a chunk larger than the AUX area keeps its newest records after a gap") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  // 12 records = 288 bytes written over a 256-byte area: the first two (and
  // the front of the third) were overwritten.
  uint64_t size = b.cpu.write(known_branches(0, 12));
  b.ring.aux(0, size, 0);
  auto items = reader.read(v);
  REQUIRE(items.front().gap);
  REQUIRE(items.back() == stub::tracing::branch_item(fakeperf::known_branch(11).from, fakeperf::known_branch(11).to));
}

TEST_CASE("intel_bts: a corrupt data ring header does not loop or crash") {
  Buffers b;
  stub::tracing::IntelBtsReader reader;
  auto v = b.view();
  b.header.data_head = 8;  // a zero-size record header
  REQUIRE(reader.read(v) == kGap);
  REQUIRE(b.header.data_tail == 8);
  b.header.data_head = 8 + 1000;  // more than the ring holds
  REQUIRE(reader.read(v).front().gap);
}

}  // namespace test_intel_bts_reader
