// The perf BTS sample ring reader against ring images built here from known
// branch sequences, written as the kernel writes them (overwrite mode).
#include <catch2/catch.hpp>

#include "fake_perf_seam.h"
#include "stub/tracing/perf_bts_reader.h"

namespace test_perf_bts_reader {  // this file's own names, apart in a unity build

using decoder::Branch;
using fakeperf::concat;
using fakeperf::items_of;
using fakeperf::known_branches;
using stub::tracing::TraceItem;
using stub::tracing::TraceItems;

namespace {

// A 256-byte ring: not a multiple of 24, so samples split at its edge, and
// at most 10 whole samples (240 bytes) can be read back from data_head.
struct Ring {
  perf_event_mmap_page header{};
  alignas(8) uint8_t data[256] = {};
  fakeperf::RingWriter writer{&header, data, sizeof data};
  stub::tracing::PerfRing view() { return stub::tracing::PerfRing{&header, data, sizeof data, {}}; }
};

}  // namespace

TEST_CASE("perf ring: empty, then partial, then a delta read of the rest") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  REQUIRE(reader.read(r.view()).empty());
  REQUIRE(reader.read(r.view()).empty());  // delta after empty: still nothing

  r.writer.samples(known_branches(0, 3));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(0, 3)));
  REQUIRE(reader.position() == 72);
  REQUIRE(reader.read(r.view()).empty());  // nothing new

  r.writer.samples(known_branches(3, 2));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(3, 2)));
}

TEST_CASE("perf ring: exactly full is read whole without a gap; one more overflows") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  r.writer.samples(known_branches(0, 10));  // 240 bytes: all a read from head can frame
  REQUIRE(reader.read(r.view()) == items_of(known_branches(0, 10)));
  REQUIRE(reader.stats().overflows == 0);

  // Delta after full: 11 more, the oldest of which the kernel overwrote.
  r.writer.samples(known_branches(10, 11));
  auto items = reader.read(r.view());
  REQUIRE(items == concat({stub::tracing::gap_item()}, items_of(known_branches(11, 10))));
  REQUIRE(reader.stats().overflows == 1);
  // And the next delta is exact again.
  r.writer.samples(known_branches(21, 2));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(21, 2)));
}

TEST_CASE("perf ring: wrapped data and a sample split at the ring's edge") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  r.writer.samples(known_branches(0, 8));  // up to 192
  REQUIRE(reader.read(r.view()).size() == 8);
  // Sample 10 occupies [240, 264): 16 bytes at the end, 8 at the start.
  r.writer.samples(known_branches(8, 6));  // up to 336: wrapped
  REQUIRE(r.header.data_head == 336);
  REQUIRE(reader.read(r.view()) == items_of(known_branches(8, 6)));
  // Delta after wrapping.
  r.writer.samples(known_branches(14, 3));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(14, 3)));
}

TEST_CASE("perf ring: the split sample's halves really are at both ends") {
  Ring r;
  r.header.data_head = 240;  // as if 10 samples had been read already
  stub::tracing::PerfBtsReader reader;
  (void)reader.read(r.view());  // framing from head needs whole records: skip these
  r.writer.sample(Branch{0x1111, 0x2222});
  uint64_t from_low = 0;
  std::memcpy(&from_low, r.data + 248, 8);  // ip right after the header
  REQUIRE(from_low == 0x1111);
  uint64_t to = 0;
  std::memcpy(&to, r.data + 0, 8);  // addr continues at the start
  REQUIRE(to == 0x2222);
  REQUIRE(reader.read(r.view()) == TraceItems{stub::tracing::branch_item(0x1111, 0x2222)});
}

TEST_CASE("perf ring: kernel addresses are skipped, in every read") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  auto user = known_branches(0, 4);
  r.writer.sample(user[0]);
  r.writer.sample(Branch{0xffffffff81000000, user[1].from});  // sysret into user space
  r.writer.sample(user[1]);
  r.writer.sample(Branch{user[2].from, 0xffffffff81000010});
  REQUIRE(reader.read(r.view()) == items_of({user[0], user[1]}));
  REQUIRE(reader.stats().kernel_skipped == 2);
  r.writer.sample(Branch{0xffff800000000000, 0x1});
  r.writer.sample(user[3]);
  REQUIRE(reader.read(r.view()) == items_of({user[3]}));
}

TEST_CASE("perf ring: PERF_RECORD_LOST becomes a gap between the branches") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  r.writer.samples(known_branches(0, 2));
  r.writer.lost(5);
  r.writer.samples(known_branches(7, 2));
  REQUIRE(reader.read(r.view()) ==
          concat(concat(items_of(known_branches(0, 2)), {stub::tracing::gap_item()}), items_of(known_branches(7, 2))));
  REQUIRE(reader.stats().lost == 5);
  // Delta after a loss.
  r.writer.samples(known_branches(9, 1));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(9, 1)));
  // A LOST record as the newest thing read.
  r.writer.lost(1);
  REQUIRE(reader.read(r.view()) == TraceItems{stub::tracing::gap_item()});
}

TEST_CASE("perf ring: a record that cannot be framed backwards ends the walk with a gap") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  r.writer.samples(known_branches(0, 2));
  r.writer.other(PERF_RECORD_THROTTLE, 32);
  r.writer.samples(known_branches(2, 2));
  REQUIRE(reader.read(r.view()) == concat({stub::tracing::gap_item()}, items_of(known_branches(2, 2))));
  r.writer.samples(known_branches(4, 1));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(4, 1)));
}

TEST_CASE("perf ring: data_head moving during the read is re-read") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  r.writer.samples(known_branches(0, 2));
  int loads = 0;
  auto view = r.view();
  // The second load sees the kernel's two newer samples: the reader must
  // copy again and return all four.
  view.load_head = [&] {
    if (++loads == 2) r.writer.samples(known_branches(2, 2));
    return r.header.data_head;
  };
  REQUIRE(reader.read(view) == items_of(known_branches(0, 4)));
  REQUIRE(reader.stats().retries == 1);
  REQUIRE(loads == 4);
  // Delta after the moving read.
  r.writer.samples(known_branches(4, 1));
  REQUIRE(reader.read(r.view()) == items_of(known_branches(4, 1)));
}

TEST_CASE("perf ring: a head that never settles keeps only untorn samples, nothing is duplicated") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  r.writer.samples(known_branches(0, 9));
  uint64_t next = 9;
  auto view = r.view();
  // The kernel writes 3 samples at every load: by the last attempt the
  // oldest copied bytes were overwritten.
  view.load_head = [&] {
    r.writer.samples(known_branches(next, 3));
    next += 3;
    return r.header.data_head;
  };
  TraceItems first = reader.read(view);
  TraceItems second = reader.read(r.view());
  REQUIRE(reader.stats().retries == 4);
  // Whatever was kept, in order, ends exactly where the next read begins.
  REQUIRE(!first.empty());
  REQUIRE(first.front().gap);  // torn samples were dropped: a gap says so
  TraceItems all = concat(first, second);
  std::vector<Branch> got;
  for (const auto& item : all) {
    if (!item.gap) got.push_back(item.branch);
  }
  REQUIRE(got.back() == fakeperf::known_branch(next - 1));
  for (std::size_t i = 1; i < got.size(); ++i) REQUIRE(got[i].to == got[i - 1].to + 0x10);
}

TEST_CASE("perf ring: items feed a BlockTrace whose blocks equal the known sequence, gaps never joined") {
  Ring r;
  stub::tracing::PerfBtsReader reader;
  decoder::BlockTrace trace(0x401000, 64);
  r.writer.samples(known_branches(0, 3));
  stub::tracing::append_items(trace, reader.read(r.view()));
  auto blocks = trace.blocks(trace.first_sequence(), 0x401000 + 0x30 + 4);
  REQUIRE(blocks == std::vector<decoder::Block>{{0x401000, 0x40100b}, {0x401010, 0x40101b},
                                                {0x401020, 0x40102b}, {0x401030, 0x401034}});
  // Lost records: the block before the loss ends below its begin (a gap to
  // gdb and to replay), the branch after it stands alone.
  r.writer.lost(2);
  r.writer.samples(known_branches(5, 1));
  stub::tracing::append_items(trace, reader.read(r.view()));
  blocks = trace.blocks(trace.first_sequence(), 0x401060 + 2);
  REQUIRE(blocks.size() == 6);
  REQUIRE(blocks[3] == decoder::Block{0x401030, stub::tracing::kGapAddress});
  REQUIRE(blocks[3].end < blocks[3].begin);
  REQUIRE(blocks[4] == decoder::Block{0x40105b, 0x40105b});
  REQUIRE(blocks[5] == decoder::Block{0x401060, 0x401062});
}

}  // namespace test_perf_bts_reader
