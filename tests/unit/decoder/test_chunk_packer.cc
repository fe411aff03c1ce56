// decoder/chunk_packer.h through BlockTrace: with a packer, a sealed chunk
// keeps its branches as they are until its PT segment comes back and is
// collected (explicit if none comes, or the packer is replaced); the
// branches and stacks read the same all along; a result for branches
// dropped (or a history cleared) meanwhile is ignored; only chunks whose
// code fits a snapshot go to the packer; past kMaxPendingPacks waiting
// the trace encodes them, and they go to be packed once the packer is
// idle, never packed in place. The snapshot holds
// the code as it was when the chunk was sealed. Also the threaded packer
// (stub/tracing/background_packer.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/branch_chunk.h"
#include "decoder/chunk_packer.h"
#include "pt_program.h"
#include "stub/tracing/background_packer.h"

namespace test_chunk_packer {  // this file's own names, apart in a unity build

using decoder::BlockTrace;
using decoder::Branch;
using decoder::StackSnapshot;
using pt_program::B;

namespace {

// The program's loop, func and back: B+0x07 jne B+0x05 twice, then out,
// call func, ret, and from B+0x0e back to B.
std::vector<Branch> pass() {
  return {{B + 0x07, B + 0x05}, {B + 0x07, B + 0x05}, {B + 0x09, B + 0x2d}, {B + 0x31, B + 0x0e},
          {B + 0x0e, B}};
}

StackSnapshot stack_for(uint64_t i) { return {0x7ffc0000 - (i % 5) * 8, 0x7ffc0100}; }

std::vector<Branch> fill(BlockTrace& trace, std::size_t n, bool stacks, std::size_t first = 0) {
  std::vector<Branch> all;
  const std::vector<Branch> p = pass();
  for (std::size_t i = first; i < first + n; ++i) {
    const Branch b = p[i % p.size()];
    all.push_back(b);
    REQUIRE((stacks ? trace.append(b.from, b.to, stack_for(i)) : trace.append(b.from, b.to)));
  }
  return all;
}

// fill's branches with stack_for's snapshots as one log of the
// translating tracer: `n` records, owned by what a trace may be lent.
std::shared_ptr<std::vector<decoder::StackedBranch>> log_of(std::size_t n) {
  auto log = std::make_shared<std::vector<decoder::StackedBranch>>();
  const std::vector<Branch> p = pass();
  for (std::size_t i = 0; i < n; ++i) log->push_back({p[i % p.size()], stack_for(i)});
  return log;
}

std::vector<Branch> branches_of(const std::vector<decoder::StackedBranch>& log) {
  std::vector<Branch> out;
  for (const decoder::StackedBranch& b : log) out.push_back(b.branch);
  return out;
}

// fill's branches, with stacks, stored as one run (the translating
// tracer's drains).
std::vector<Branch> fill_run(BlockTrace& trace, std::size_t n) {
  const auto log = log_of(n);
  REQUIRE(trace.append_stacked(*log) == n);
  return branches_of(*log);
}

// The trace reads `all` (and stack_for's snapshots) from its first branch.
void require_reads(const BlockTrace& trace, const std::vector<Branch>& all, bool stacks) {
  for (uint64_t seq = 0; seq < all.size(); ++seq) {
    REQUIRE(trace.at(seq) == all[seq]);
    if (stacks) REQUIRE(trace.stack_at(seq) == stack_for(seq));
  }
}

// Gives every job back unpacked, as a packer going away does.
class GivingBackPacker final : public decoder::ChunkPacker {
 public:
  void submit(std::shared_ptr<decoder::PackInbox> inbox, decoder::PackJob job) override {
    jobs.emplace_back(std::move(inbox), std::move(job));
  }
  void give_back() {
    for (auto& [inbox, job] : jobs) inbox->put(decoder::unrun_pack_job(job));
    jobs.clear();
  }
  std::deque<std::pair<std::shared_ptr<decoder::PackInbox>, decoder::PackJob>> jobs;
};

// Keeps the jobs until the test runs them.
class HeldPacker final : public decoder::ChunkPacker {
 public:
  void submit(std::shared_ptr<decoder::PackInbox> inbox, decoder::PackJob job) override {
    jobs.emplace_back(std::move(inbox), std::move(job));
  }
  void run_all() {
    for (auto& [inbox, job] : jobs) inbox->put(decoder::run_pack_job(job, packer));
    jobs.clear();
  }
  std::deque<std::pair<std::shared_ptr<decoder::PackInbox>, decoder::PackJob>> jobs;
  decoder::SegmentPacker packer{decoder::InstructionDecoder::create().value()};  // kept across jobs, as the thread's
};

struct Code {
  std::vector<uint8_t> bytes = pt_program::kCode;
  std::shared_ptr<decoder::BufferReader> reader =
      std::make_shared<decoder::BufferReader>(B, bytes.data(), bytes.size());
};

}  // namespace

TEST_CASE("chunk packer: chunks are raw until packed and collected, and read the same all along") {
  for (bool stacks : {false, true}) {
    CAPTURE(stacks);
    Code code;
    auto packer = std::make_shared<HeldPacker>();
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    trace.set_packer(packer);
    const std::vector<Branch> all = fill(trace, 3 * BlockTrace::kChunkBranches + 10, stacks);
    REQUIRE(packer->jobs.size() == 3);
    CHECK(trace.pt_chunks() == 0);
    CHECK(trace.explicit_chunks() == 3);
    CHECK(trace.raw_chunks() == 3);  // never encoded explicitly: the packed form is coming
    require_reads(trace, all, stacks);
    // The code changes after sealing: the snapshot packs what ran.
    code.bytes[0x31] = 0x90;
    packer->run_all();
    code.bytes[0x31] = 0xc3;
    CHECK(trace.pt_chunks() == 0);  // not collected yet
    trace.collect_packed();
    CHECK(trace.pt_chunks() == 3);
    CHECK(trace.explicit_chunks() == 0);
    CHECK(trace.raw_chunks() == 0);
    require_reads(trace, all, stacks);
    // The stored segments are what packing in place makes.
    BlockTrace in_place(B, 100000);
    in_place.set_code(code.reader);
    (void)fill(in_place, all.size(), stacks);
    const auto got = trace.stored_segments(0);
    const auto want = in_place.stored_segments(0);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(std::vector<uint8_t>(got[i].packets.begin(), got[i].packets.end()) ==
            std::vector<uint8_t>(want[i].packets.begin(), want[i].packets.end()));
    }
  }
}

TEST_CASE("chunk packer: results for dropped branches or a cleared history are ignored") {
  Code code;
  auto packer = std::make_shared<HeldPacker>();
  BlockTrace trace(B, 2 * BlockTrace::kChunkBranches);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  std::vector<Branch> all = fill(trace, 4 * BlockTrace::kChunkBranches + 3, false);
  packer->run_all();
  trace.collect_packed();
  // Four chunks went to the packer; the two the ring still holds were
  // replaced, the results for the dropped ones found no chunk.
  REQUIRE(trace.first_sequence() == all.size() - 2 * BlockTrace::kChunkBranches);
  CHECK(trace.pt_chunks() == 2);
  CHECK(trace.explicit_chunks() == 0);
  for (uint64_t seq = trace.first_sequence(); seq < trace.end_sequence(); ++seq) REQUIRE(trace.at(seq) == all[seq]);

  // A history cleared while its chunks were with the packer.
  const uint64_t before = trace.end_sequence();
  (void)fill(trace, BlockTrace::kChunkBranches + 1, false, before);
  REQUIRE(packer->jobs.size() == 1);
  trace.clear(B);
  std::vector<Branch> fresh = fill(trace, BlockTrace::kChunkBranches + 1, false);
  packer->run_all();
  trace.collect_packed();
  CHECK(trace.pt_chunks() == 1);  // the fresh chunk; the old result went to the old inbox
  for (uint64_t seq = trace.first_sequence(); seq < trace.end_sequence(); ++seq) {
    REQUIRE(trace.at(seq) == fresh[seq - trace.first_sequence()]);
  }
}

TEST_CASE("chunk packer: a job without code encodes its chunk as the trace would; one handed again to be packed does not") {
  for (bool stacks : {false, true}) {
    CAPTURE(stacks);
    Code code;
    auto raw = std::make_shared<decoder::RawChunk>();
    decoder::BranchChunkWriter writer(B, stacks);
    for (std::size_t i = 0; i < 3 * pass().size(); ++i) {
      raw->branches.push_back(pass()[i % pass().size()]);
      if (stacks) raw->stacks.push_back(stack_for(i));
      writer.add(raw->branches.back(), stacks ? raw->stacks.back() : StackSnapshot{});
    }
    decoder::SegmentPacker packer{decoder::InstructionDecoder::create().value()};
    decoder::PackJob job{0x1000, B, raw, stacks, nullptr};
    decoder::PackResult encoded = decoder::run_pack_job(job, packer);
    CHECK_FALSE(encoded.segment);
    REQUIRE(encoded.explicit_bytes);
    CHECK(*encoded.explicit_bytes == writer.take());
    CHECK(encoded.first_sequence == 0x1000);
    CHECK(encoded.count == raw->branches.size());
    // Branches the code cannot give (no branch ends a block at B+0x200):
    // no segment is kept.
    auto other = std::make_shared<decoder::RawChunk>();
    other->branches.assign(2, Branch{B + 0x200, B});
    if (stacks) other->stacks.assign(2, stack_for(0));
    job.raw = other;
    job.code = decoder::CodeSnapshot::take(*code.reader, B, other->branches, 32);
    REQUIRE(job.code);
    decoder::PackResult unpacked = decoder::run_pack_job(job, packer);
    CHECK_FALSE(unpacked.segment);
    CHECK(unpacked.explicit_bytes);  // to be encoded after all
    job.encode_unpacked = false;
    CHECK_FALSE(decoder::run_pack_job(job, packer).explicit_bytes);  // explicit already
  }
}

TEST_CASE("chunk packer: past kMaxPendingPacks waiting chunks, the trace encodes chunks, then they are packed once fewer wait") {
  // Without stacks, with, and with stacks stored as one run (whose chunks
  // past kMaxPendingPacks are encoded from the run itself).
  for (int form = 0; form < 3; ++form) {
    const bool stacks = form > 0;
    CAPTURE(form);
    Code code;
    auto packer = std::make_shared<HeldPacker>();
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    trace.set_packer(packer);
    const std::size_t chunks = BlockTrace::kMaxPendingPacks + 5;
    const std::size_t n = chunks * BlockTrace::kChunkBranches + 1;
    const std::vector<Branch> all = form == 2 ? fill_run(trace, n) : fill(trace, n, stacks);
    // The oldest kMaxPendingPacks went, raw, with their code; the trace
    // encoded the rest (the program would have waited for packing here).
    REQUIRE(packer->jobs.size() == BlockTrace::kMaxPendingPacks);
    for (std::size_t i = 0; i < packer->jobs.size(); ++i) {
      CHECK(packer->jobs[i].second.first_sequence == i * BlockTrace::kChunkBranches);
      CHECK(packer->jobs[i].second.code != nullptr);
      CHECK(packer->jobs[i].second.with_stacks == stacks);
    }
    CHECK(trace.raw_chunks() == BlockTrace::kMaxPendingPacks);
    CHECK(trace.backlog_chunks() == chunks - BlockTrace::kMaxPendingPacks);
    require_reads(trace, all, stacks);
    packer->run_all();
    trace.collect_packed();
    CHECK(trace.raw_chunks() == 0);
    CHECK(trace.pt_chunks() == BlockTrace::kMaxPendingPacks);
    CHECK(trace.explicit_chunks() == chunks - BlockTrace::kMaxPendingPacks);
    require_reads(trace, all, stacks);
    // The packer idle, the encoded ones go to be packed, the newest first.
    REQUIRE(packer->jobs.size() == chunks - BlockTrace::kMaxPendingPacks);
    CHECK(packer->jobs.front().second.first_sequence == (chunks - 1) * BlockTrace::kChunkBranches);
    for (const auto& job : packer->jobs) CHECK(job.second.code != nullptr);
    packer->run_all();
    trace.collect_packed();
    CHECK(packer->jobs.empty());
    CHECK(trace.pt_chunks() == chunks);
    require_reads(trace, all, stacks);
  }
}

TEST_CASE("chunk packer: many chunks past kMaxPendingPacks are packed later, the newest first, a few at a time") {
  Code code;
  auto packer = std::make_shared<HeldPacker>();
  BlockTrace trace(B, 1000000);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  const std::size_t chunks = 3 * BlockTrace::kMaxPendingPacks + 3;
  const std::vector<Branch> all = fill(trace, chunks * BlockTrace::kChunkBranches + 1, false);
  CHECK(packer->jobs.size() == BlockTrace::kMaxPendingPacks);
  CHECK(trace.raw_chunks() == BlockTrace::kMaxPendingPacks);
  CHECK(trace.pt_chunks() == 0);
  CHECK(trace.explicit_chunks() == chunks);
  // Each time the packer's jobs are done, the next ones are handed over,
  // the newest first, until every chunk is packed.
  std::vector<uint64_t> handed;
  for (int round = 0; round < 20 && !packer->jobs.empty(); ++round) {
    CHECK(packer->jobs.size() <= BlockTrace::kMaxPendingPacks);
    for (const auto& job : packer->jobs) handed.push_back(job.second.first_sequence);
    packer->run_all();
    trace.collect_packed();
  }
  CHECK(packer->jobs.empty());
  CHECK(trace.pt_chunks() == chunks);
  CHECK(trace.explicit_chunks() == 0);
  CHECK(trace.backlog_decoded() == chunks - BlockTrace::kMaxPendingPacks);
  // Every chunk once: the first ones as they were sealed, then the rest.
  REQUIRE(handed.size() == chunks);
  CHECK(handed[BlockTrace::kMaxPendingPacks] == (chunks - 1) * BlockTrace::kChunkBranches);
  for (std::size_t i = 0; i < all.size(); ++i) REQUIRE(trace.at(i) == all[i]);
}

TEST_CASE("chunk packer: a chunk whose code a snapshot cannot take is encoded by the trace, never packed") {
  Code code;
  auto packer = std::make_shared<HeldPacker>();
  BlockTrace trace(B, 100000);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  // One block wider than a snapshot walks, then the loop.
  REQUIRE(trace.append(B + 0x100000, B));
  std::vector<Branch> all = {{B + 0x100000, B}};
  for (const Branch& b : fill(trace, BlockTrace::kChunkBranches, false, 0)) all.push_back(b);
  CHECK(packer->jobs.empty());
  CHECK(trace.raw_chunks() == 0);
  CHECK(trace.explicit_chunks() == 1);
  // Tried and refused: never decoded again to be refused again.
  CHECK(trace.backlog_chunks() == 0);
  trace.collect_packed();
  CHECK(packer->jobs.empty());
  for (uint64_t seq = 0; seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);
}

TEST_CASE("chunk packer: a chunk encoded untried while packs waited goes to the backlog only if its code may fit") {
  Code code;
  auto packer = std::make_shared<HeldPacker>();
  BlockTrace trace(B, 100000);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  // kMaxPendingPacks chunks go with their code; then one with a block no
  // snapshot walks, then one of the loop alone: both encoded untried.
  const std::size_t packed = BlockTrace::kMaxPendingPacks;
  (void)fill(trace, packed * BlockTrace::kChunkBranches, false);
  REQUIRE(trace.append(B + 0x100000, B));
  (void)fill(trace, 2 * BlockTrace::kChunkBranches, false);
  REQUIRE(packer->jobs.size() == packed);
  for (const auto& job : packer->jobs) CHECK(job.second.code != nullptr);
  CHECK(trace.backlog_chunks() == 1);  // the loop's: the wide one surely never fits
  // Once collected, only the loop's chunk goes to be packed; the other
  // stays explicit without being decoded.
  packer->run_all();
  trace.collect_packed();
  REQUIRE(packer->jobs.size() == 1);
  CHECK(packer->jobs.front().second.first_sequence == (packed + 1) * BlockTrace::kChunkBranches);
  CHECK(packer->jobs.front().second.code != nullptr);
  CHECK(trace.backlog_chunks() == 0);
  CHECK(trace.backlog_decoded() == 1);
  packer->run_all();
  trace.collect_packed();
  CHECK(trace.pt_chunks() == packed + 1);
  CHECK(trace.explicit_chunks() == 1);
  CHECK(trace.at(packed * BlockTrace::kChunkBranches) == Branch{B + 0x100000, B});
}

TEST_CASE("chunk packer: while kMaxPendingPacks packs wait, the backlog decodes nothing") {
  Code code;
  auto packer = std::make_shared<HeldPacker>();
  BlockTrace trace(B, 1000000);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  std::vector<Branch> all;
  std::size_t at = 0;  // where in pass() the next branch is
  auto chunks = [&](std::size_t n, bool wide) {
    for (std::size_t c = 0; c < n; ++c) {
      std::size_t loop = BlockTrace::kChunkBranches;
      if (wide) {  // a block no snapshot walks, back to B
        REQUIRE(trace.append(B + 0x100000, B));
        all.push_back({B + 0x100000, B});
        at = 0;
        --loop;
      }
      for (const Branch& b : fill(trace, loop, false, at)) all.push_back(b);
      at += loop;
    }
  };
  chunks(BlockTrace::kMaxPendingPacks, false);
  chunks(1, false);  // sealed by the next branch
  REQUIRE(packer->jobs.size() == BlockTrace::kMaxPendingPacks);
  // Chunks sealed now are encoded by the trace, for the backlog but for
  // the two whose code no snapshot takes; feeding it, at each seal and
  // collect, decodes none for a packer that takes no more packs.
  chunks(2, true);
  chunks(3, false);
  for (const Branch& b : fill(trace, 1, false, at)) all.push_back(b);
  CHECK(trace.backlog_chunks() == 4);
  for (int collect = 0; collect < 3; ++collect) trace.collect_packed();
  CHECK(trace.backlog_decoded() == 0);
  CHECK(packer->jobs.size() == BlockTrace::kMaxPendingPacks);
  // Once the packer is done, the backlog's chunks go to be packed.
  for (int round = 0; round < 40 && !packer->jobs.empty(); ++round) {
    packer->run_all();
    trace.collect_packed();
  }
  CHECK(packer->jobs.empty());
  CHECK(trace.backlog_decoded() == 4);
  CHECK(trace.explicit_chunks() == 2);  // the two no snapshot takes
  for (uint64_t seq = 0; seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);
}

TEST_CASE("chunk packer: the pages a snapshot would take, without reading them") {
  constexpr uint64_t P = 0x400000;
  // Each block on a page of its own: 32 fit, 33 do not.
  auto blocks_on_pages = [&](std::size_t pages) {
    std::vector<Branch> branches;
    for (std::size_t i = 1; i < pages; ++i) branches.push_back({P + (i - 1) * 0x2000 + 0x10, P + i * 0x2000});
    return branches;
  };
  const auto fits = decoder::snapshot_pages(P, blocks_on_pages(32), 32);
  REQUIRE(fits.has_value());
  CHECK(fits->size() == 32);
  CHECK(std::is_sorted(fits->begin(), fits->end()));
  CHECK(fits->front() == P);
  CHECK_FALSE(decoder::snapshot_pages(P, blocks_on_pages(33), 32).has_value());
  // A block ending 15 bytes or less before a page's end may reach into the next.
  const auto edge = decoder::snapshot_pages(P, {{P + 0xff8, P + 0x10}}, 32);
  REQUIRE(edge.has_value());
  CHECK(*edge == std::vector<uint64_t>{P, P + 0x1000});
  CHECK_FALSE(decoder::snapshot_pages(P + 0x40, {{P + 0x07, P + 0x05}}, 32).has_value());  // ends before it begins
}

TEST_CASE("chunk packer: the inbox hands its results over by trading vectors") {
  decoder::PackInbox inbox;
  std::vector<decoder::PackResult> out(3);
  inbox.take(out);
  CHECK(out.empty());  // nothing put: cleared
  inbox.expect_one();
  inbox.expect_one();
  decoder::PackResult first;
  first.first_sequence = 7;
  inbox.put(first);
  CHECK(inbox.has_results());
  CHECK(inbox.pending() == 1);
  decoder::PackResult second;
  second.first_sequence = 9;
  inbox.put(second);
  CHECK(inbox.pending() == 0);
  inbox.take(out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].first_sequence == 7);
  CHECK(out[1].first_sequence == 9);
  CHECK_FALSE(inbox.has_results());
  inbox.take(out);
  CHECK(out.empty());
}

TEST_CASE("chunk packer: a chunk left explicit whose branches were dropped is not handed over") {
  Code code;
  auto packer = std::make_shared<HeldPacker>();
  BlockTrace trace(B, (BlockTrace::kMaxPendingPacks + 2) * BlockTrace::kChunkBranches);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  // Two more chunks than go with their code, then as many again: the
  // oldest go, those the trace encoded with them. Only the first jobs
  // (handed while their branches were there) may be for dropped branches.
  const std::size_t chunks = 2 * (BlockTrace::kMaxPendingPacks + 2);
  (void)fill(trace, chunks * BlockTrace::kChunkBranches + 1, false);
  CHECK(packer->jobs.size() == BlockTrace::kMaxPendingPacks);
  std::size_t later = 0;
  for (int round = 0; round < 4; ++round) {
    packer->run_all();
    trace.collect_packed();
    for (const auto& job : packer->jobs) {
      CHECK(job.second.first_sequence + BlockTrace::kChunkBranches > trace.first_sequence());
      ++later;
    }
  }
  // The first jobs with code were the oldest chunks, all dropped since:
  // every chunk held now went to be packed from the backlog.
  CHECK(later == trace.explicit_chunks() + trace.pt_chunks());
  CHECK(trace.explicit_chunks() == 0);
}

TEST_CASE("chunk packer: a snapshot reads the pages under the blocks, and refuses a block it cannot walk") {
  Code code;
  auto snapshot = decoder::CodeSnapshot::take(*code.reader, B, pass(), 32);
  REQUIRE(snapshot != nullptr);
  uint8_t bytes[4] = {};
  CHECK(snapshot->read(B + 0x05, bytes, 4) == 4);
  CHECK(bytes[0] == 0xff);
  CHECK(snapshot->read(B + code.bytes.size(), bytes, 4) == 0);  // past the code: as the reader
  // A block that ends before it begins (a gap's address), or too wide.
  CHECK(decoder::CodeSnapshot::take(*code.reader, B + 0x40, {{B + 0x07, B + 0x05}}, 32) == nullptr);
  CHECK(decoder::CodeSnapshot::take(*code.reader, B, {{B + 0x100000, B}}, 32) == nullptr);
}

namespace {

// Any address reads as nops; the pages asked for are logged.
struct PageLog final : decoder::CodeReader {
  std::vector<uint64_t> reads;
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    reads.push_back(addr);
    std::fill_n(out, len, uint8_t{0x90});
    return len;
  }
};

}  // namespace

TEST_CASE("chunk packer: a snapshot reads each page once, however often the blocks come back to it") {
  constexpr uint64_t P = 0x400000, Q = 0x403000;
  const std::vector<Branch> branches = {
      {P + 0x10, Q + 0x10}, {Q + 0x20, P + 0x10}, {P + 0x20, Q + 0x10}, {Q + 0x20, P + 0x100}};
  PageLog log;
  REQUIRE(decoder::CodeSnapshot::take(log, P, branches, 2) != nullptr);
  CHECK(log.reads == std::vector<uint64_t>{P, Q});
  CHECK(decoder::CodeSnapshot::take(log, P, branches, 1) == nullptr);  // more pages than allowed
  // A block near the page's end takes the next page too (an instruction
  // there may reach into it).
  log.reads.clear();
  REQUIRE(decoder::CodeSnapshot::take(log, P, {{P + 0xff8, Q}}, 32) != nullptr);
  CHECK(log.reads == std::vector<uint64_t>{P, P + 0x1000, Q});
  // The top page of the address space: its walk must not wrap to page 0.
  constexpr uint64_t Top = 0xfffffffffffff000;
  log.reads.clear();
  REQUIRE(decoder::CodeSnapshot::take(log, Top, {{Top + 0xf00, Top + 0x10}}, 32) != nullptr);
  CHECK(log.reads == std::vector<uint64_t>{Top});
}

// With a worker at idle priority, only it packs: a pack (1-2 ms of libipt
// walking) taken by a worker on the spare CPU held up the encodes queued
// behind it, and the tracer, on the program's CPU, then encoded them itself
// while the program waited (docs/performance.md).
TEST_CASE("chunk packer: the background packer packs on its own threads; wait_packed collects all") {
  Code code;
  // One worker; three and one at idle priority, finishing jobs in any order.
  stub::tracing::PackerPlacement several;
  several.workers = 3;
  several.idle_worker = true;
  for (const stub::tracing::PackerPlacement& placement : {stub::tracing::PackerPlacement{}, several}) {
    auto packer = std::make_shared<stub::tracing::BackgroundPacker>(placement);
    CHECK(packer->workers() == placement.workers + (placement.idle_worker ? 1 : 0));
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    trace.set_packer(packer);
    const std::vector<Branch> all = fill(trace, 12 * BlockTrace::kChunkBranches + 1, true);
    CHECK(trace.raw_chunks() <= BlockTrace::kMaxPendingPacks);  // the rest encoded where sealed
    trace.wait_packed();
    CHECK(trace.pt_chunks() == 12);
    CHECK(packer->packs_run(true) == (placement.idle_worker ? 12 : 0));
    CHECK(packer->packs_run(false) == (placement.idle_worker ? 0 : 12));
    for (uint64_t seq = 0; seq < all.size(); ++seq) {
      REQUIRE(trace.at(seq) == all[seq]);
      REQUIRE(trace.stack_at(seq) == stack_for(seq));
    }
  }
  // Going away with jobs queued: the traces keep their chunks explicit.
  BlockTrace other(B, 100000);
  other.set_code(code.reader);
  {
    auto short_lived = std::make_shared<stub::tracing::BackgroundPacker>();
    other.set_packer(short_lived);
    (void)fill(other, 4 * BlockTrace::kChunkBranches + 1, false);
    other.set_packer(nullptr);
  }
  for (uint64_t seq = 0; seq < other.end_sequence(); ++seq) REQUIRE(other.at(seq) == pass()[seq % pass().size()]);
}

TEST_CASE("chunk packer: a handed chunk given back unpacked, or whose packer goes, is encoded explicitly") {
  for (bool stacks : {false, true}) {
    CAPTURE(stacks);
    Code code;
    auto packer = std::make_shared<GivingBackPacker>();
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    trace.set_packer(packer);
    const std::vector<Branch> all = fill(trace, 3 * BlockTrace::kChunkBranches + 10, stacks);
    REQUIRE(packer->jobs.size() == 3);
    REQUIRE(trace.raw_chunks() == 3);
    const std::size_t raw_memory = trace.memory_bytes();
    packer->give_back();
    trace.collect_packed();
    CHECK(trace.raw_chunks() == 0);
    CHECK(trace.pt_chunks() == 0);
    CHECK(trace.explicit_chunks() == 3);
    CHECK(trace.memory_bytes() < raw_memory);  // a few bytes a branch instead of the structs
    require_reads(trace, all, stacks);

    // Chunks with a packer that is replaced: their results would go to the
    // old inbox.
    const std::vector<Branch> more = fill(trace, 2 * BlockTrace::kChunkBranches, stacks, all.size());
    REQUIRE(trace.raw_chunks() == 2);
    trace.set_packer(nullptr);
    CHECK(trace.raw_chunks() == 0);
    CHECK(trace.explicit_chunks() == 5);
    require_reads(trace, all, stacks);
    for (uint64_t i = 0; i < more.size(); ++i) REQUIRE(trace.at(all.size() + i) == more[i]);
  }
}

TEST_CASE("chunk packer: a raw chunk's branches dropped from the ring free their memory") {
  Code code;
  auto packer = std::make_shared<GivingBackPacker>();
  BlockTrace trace(B, 2 * BlockTrace::kChunkBranches);
  trace.set_code(code.reader);
  trace.set_packer(packer);
  const std::size_t empty = trace.memory_bytes();
  (void)fill(trace, 6 * BlockTrace::kChunkBranches + 1, false);
  // Only the newest two chunks are held; the others went, raw, with their memory.
  CHECK(trace.raw_chunks() <= 2);
  CHECK(trace.memory_bytes() - empty <= 3 * BlockTrace::kChunkBranches * (sizeof(Branch) + 8));
  packer->give_back();
  trace.collect_packed();
  CHECK(trace.raw_chunks() == 0);
}

TEST_CASE("chunk packer: a chunk's code surely too wide for a snapshot, told without a sorted set") {
  constexpr uint64_t P = 0x400000;
  // Blocks over `pages` pages `stride` apart, back to a page already seen
  // every fourth block, `total` branches in all (the count is checked at
  // each block: the answer must not depend on where it first says so).
  auto blocks = [&](std::size_t pages, uint64_t stride, std::size_t total) {
    std::vector<Branch> branches;
    uint64_t at = P;
    for (std::size_t i = 1; i <= total; ++i) {
      const uint64_t next = P + (i % 4 == 0 ? 0 : (i % pages) * stride);
      branches.push_back({at + 0x10, next});
      at = next;
    }
    return branches;
  };
  for (std::size_t total : {31, 40, 127, 128, 129, 1024}) {
    for (std::size_t pages : {2, 31, 32, 33, 200}) {
      INFO("pages " << pages << ", branches " << total);
      const std::vector<Branch> branches = blocks(pages, 0x3000, total);
      // Within 4 MiB of code the two agree.
      const bool exceeds = !decoder::snapshot_pages(P, branches, 32).has_value();
      CHECK(decoder::exceeds_snapshot_pages(P, branches, 32) == exceeds);
      // Looking at some blocks only: sure still, and here it finds out
      // (the blocks looked at lie on pages of their own but every fourth).
      for (std::size_t every : {2, 3, 8}) {
        const bool sampled = decoder::exceeds_snapshot_pages(P, branches, 32, every);
        CHECK((!sampled || exceeds));
        // Told the same of the branches stored with stacks.
        std::vector<decoder::StackedBranch> stacked;
        for (const Branch& b : branches) stacked.push_back({b, stack_for(stacked.size())});
        CHECK(decoder::exceeds_snapshot_pages(P, std::span<const decoder::StackedBranch>(stacked), 32, every) == sampled);
        if (total >= 1024 && pages >= 200 && every != 8) CHECK(sampled);
      }
    }
  }
  // A chunk whose wide code lies only in the blocks not looked at: not
  // surely too wide (every 8th block, from the first, stays on one page).
  std::vector<Branch> hidden;
  for (uint64_t i = 0, at = P; i < 400; ++i) {
    const uint64_t next = i % 8 == 0 ? P + (i + 1) * 0x1000 : P;  // block i + 1 on a page of its own
    hidden.push_back({at + 0x10, next});
    at = next;
  }
  CHECK(decoder::exceeds_snapshot_pages(P, hidden, 32));
  CHECK_FALSE(decoder::exceeds_snapshot_pages(P, hidden, 32, 8));
  // 33 pages 4 MiB apart share one bit: not surely too wide, though they
  // are (the snapshot refuses them when it is taken).
  const std::vector<Branch> aliased = blocks(33, 0x400000, 200);
  CHECK_FALSE(decoder::snapshot_pages(P, aliased, 32).has_value());
  CHECK_FALSE(decoder::exceeds_snapshot_pages(P, aliased, 32));
  // A block that cannot be walked: surely.
  CHECK(decoder::exceeds_snapshot_pages(P + 0x40, {{P + 0x07, P + 0x05}}, 32));
  CHECK(decoder::exceeds_snapshot_pages(P, {{P + 0x20000, P}}, 32));  // longer than a block may be
  CHECK_FALSE(decoder::exceeds_snapshot_pages(P, std::vector<Branch>{}, 32));
}

TEST_CASE("chunk packer: a lent run's whole chunks go as one job, read from the run until returned") {
  const std::size_t n = 5 * BlockTrace::kChunkBranches + 7;
  Code code;
  const std::vector<Branch> all = branches_of(*log_of(n));

  enum class Way { WorkerRuns, ReturnedFirst, GivenBackUnrun };
  for (Way way : {Way::WorkerRuns, Way::ReturnedFirst, Way::GivenBackUnrun}) {
    CAPTURE(static_cast<int>(way));
    auto held = std::make_shared<HeldPacker>();
    auto giving = std::make_shared<GivingBackPacker>();
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    if (way == Way::GivenBackUnrun) {
      trace.set_packer(giving);
    } else {
      trace.set_packer(held);
    }
    auto lent = log_of(n);
    REQUIRE(trace.append_stacked(*lent, lent) == n);
    CHECK(held->jobs.size() + giving->jobs.size() == 1);  // the five whole chunks, one job
    CHECK(trace.borrowed_runs() == 1);
    CHECK(lent.use_count() > 1);  // kept while borrowed
    require_reads(trace, all, true);  // from the run meanwhile

    switch (way) {
      case Way::WorkerRuns:
        held->run_all();  // the worker claims and encodes every chunk
        trace.collect_packed();
        break;
      case Way::ReturnedFirst:
        trace.return_borrowed();  // nothing claimed yet: all encoded here
        held->run_all();          // then the job finds nothing left
        trace.collect_packed();
        break;
      case Way::GivenBackUnrun:
        giving->give_back();
        trace.collect_packed();  // never run: encoded here
        break;
    }
    CHECK(trace.borrowed_runs() == 0);
    CHECK(lent.use_count() == 1);
    // The run is the lender's again: what it writes there now is not read.
    for (decoder::StackedBranch& b : *lent) b = {{0xdead, 0xbeef}, {1, 2}};
    CHECK(trace.explicit_chunks() == 5);
    CHECK(trace.pt_chunks() == 0);
    require_reads(trace, all, true);
  }
}

TEST_CASE("chunk packer: a lent run is encoded once, whoever claims each chunk, as the trace encodes it") {
  const std::size_t chunk = 100;
  auto log = log_of(37 * chunk + 11);
  decoder::LentRun lent;
  lent.run = *log;
  lent.previous_to = B;
  lent.chunk = chunk;
  lent.with_stacks = true;
  lent.bytes.resize((log->size() + chunk - 1) / chunk);
  // Two claimers at once: every chunk once, none twice.
  std::thread worker([&] { decoder::encode_lent(lent); });
  decoder::encode_lent(lent);
  worker.join();
  REQUIRE(lent.done.load() == lent.chunks());
  uint64_t previous_to = B;
  for (std::size_t j = 0; j < lent.chunks(); ++j) {
    const auto part = std::span(*log).subspan(j * chunk, std::min(chunk, log->size() - j * chunk));
    decoder::BranchChunkWriter writer(previous_to, true);
    writer.add(part);
    REQUIRE(lent.bytes[j] == writer.take());
    previous_to = part.back().branch.to;
  }
  // Nothing left to claim: a late claimer encodes nothing.
  decoder::encode_lent(lent);
  CHECK(lent.done.load() == lent.chunks());
}

namespace {

// Branches that jump anywhere in a 47-bit address space, their stacks too:
// ~30 bytes a branch in the explicit format, near what a lent chunk counts.
std::shared_ptr<std::vector<decoder::StackedBranch>> wild_log_of(std::size_t n, uint64_t& seed) {
  auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 17) & ((uint64_t{1} << 47) - 1);
  };
  auto log = std::make_shared<std::vector<decoder::StackedBranch>>();
  for (std::size_t i = 0; i < n; ++i) log->push_back({{next(), next()}, {next(), next()}});
  return log;
}

}  // namespace

TEST_CASE("chunk packer: room() is stored in full under the stop policy, lent chunks counted against the memory cap") {
  // The translating tracer's log holds no more than room(): a run the
  // trace then cut short would leave the thread past its history's end.
  // Lent chunks count 32 bytes a branch until their bytes come (about 2
  // a branch for a loop, ~30 for wild jumps), then room() grows again, up
  // to the cap.
  constexpr std::size_t kCap = 256 * 1024;
  for (bool wild : {false, true}) {
    for (bool collect_each_run : {false, true}) {
      CAPTURE(wild, collect_each_run);
      auto held = std::make_shared<HeldPacker>();
      BlockTrace trace(B, 100'000'000, decoder::OverflowPolicy::Stop, kCap);
      trace.set_packer(held);
      std::vector<std::shared_ptr<std::vector<decoder::StackedBranch>>> lent;  // the lenders' logs
      uint64_t seed = 1;
      std::size_t stored = 0;
      for (int run = 0; run < 10000; ++run) {
        std::size_t room = trace.room();
        if (room == 0 && !held->jobs.empty()) {  // the worker catches up
          held->run_all();
          trace.collect_packed();
          room = trace.room();
        }
        if (room == 0) break;
        const std::size_t n = std::min<std::size_t>(room, 3 * BlockTrace::kChunkBranches + 500);
        auto log = wild ? wild_log_of(n, seed) : log_of(n);
        REQUIRE(trace.append_stacked(*log, log) == n);
        lent.push_back(log);
        stored += n;
        REQUIRE(trace.capped_bytes() + trace.open_branches() * BlockTrace::kMaxBytesPerBranch <= kCap);
        if (collect_each_run) {
          held->run_all();
          trace.collect_packed();
        }
      }
      held->run_all();
      trace.collect_packed();
      REQUIRE(trace.room() == 0);
      CHECK(trace.capped_bytes() <= kCap);
      CHECK(trace.size() == stored);
      if (!wild) CHECK(stored > 4 * (kCap / BlockTrace::kMaxBytesPerBranch));  // encoded: a few bytes a branch
    }
  }
}

}  // namespace test_chunk_packer
