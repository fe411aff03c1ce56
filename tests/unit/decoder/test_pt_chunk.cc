// decoder/pt_chunk.h through BlockTrace: with a code reader, sealed chunks
// are PT segments (return compression included) that read back exactly;
// what a segment cannot say stays in the explicit format; code that changed
// under a sealed segment reads as gaps, never as other branches.
#include <catch2/catch.hpp>
#include <intel-pt.h>

#include <memory>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/block_trace.h"
#include "decoder/pt_chunk.h"
#include "decoder/pt_decoder.h"
#include "decoder/pt_encoder.h"
#include "pt_program.h"

namespace test_pt_chunk {  // this file's own names, apart in a unity build

using decoder::Block;
using decoder::BlockTrace;
using decoder::Branch;
using decoder::OverflowPolicy;
using decoder::StackSnapshot;
using pt_program::B;
using pt_program::blocks;

namespace {

// The program's code in a buffer the test can change after sealing.
struct Code {
  std::vector<uint8_t> bytes = pt_program::kCode;
  std::shared_ptr<decoder::BufferReader> reader = std::make_shared<decoder::BufferReader>(B, bytes.data(), bytes.size());
};

std::vector<Branch> branches_of(const std::vector<Block>& bl) {
  std::vector<Branch> out;
  for (std::size_t i = 0; i + 1 < bl.size(); ++i) out.push_back({bl[i].end, bl[i + 1].begin});
  return out;
}

// One pass of test_pt_encoder.cc's run with a signal: the loop (TNT bits),
// call func / ret (compressed), call rdx / ret (an indirect call, then a
// compressed ret), jmp rax (TIP), the syscall, a signal at B+0x24 (FUP +
// TIP), the handler's rt_sigreturn back there (TIP), je; then sent back to
// the start from B+0x2b (another asynchronous branch).
std::vector<Branch> pass() {
  std::vector<Branch> out = branches_of(blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31},
                                                {0x0e, 0x15}, {0x33, 0x33}, {0x17, 0x1e}, {0x22, 0x24},
                                                {0x34, 0x3b}, {0x24, 0x27}, {0x2a, 0x2b}}));
  out.push_back({B + 0x2b, B});
  return out;
}

std::size_t count_packets(const std::vector<uint8_t>& bytes, pt_packet_type type) {
  pt_config config;
  pt_config_init(&config);
  config.begin = const_cast<uint8_t*>(bytes.data());
  config.end = config.begin + bytes.size();
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&config);
  REQUIRE(dec != nullptr);
  REQUIRE(pt_pkt_sync_forward(dec) >= 0);
  std::size_t n = 0;
  pt_packet packet;
  while (pt_pkt_next(dec, &packet, sizeof packet) > 0) n += packet.type == type ? 1 : 0;
  pt_pkt_free_decoder(dec);
  return n;
}

StackSnapshot stack_for(uint64_t i) { return {0x7ffc0000 - (i % 5) * 8, 0x7ffc0100 + (i % 3 == 0 ? 16u : 0u)}; }

// Appends `n` branches of repeated passes, with a stack that moves.
std::vector<Branch> fill(BlockTrace& trace, std::size_t n, bool stacks) {
  std::vector<Branch> all;
  const std::vector<Branch> p = pass();
  for (std::size_t i = 0; i < n; ++i) {
    const Branch b = p[i % p.size()];
    all.push_back(b);
    const StackSnapshot s = stack_for(i);
    REQUIRE((stacks ? trace.append(b.from, b.to, s) : trace.append(b.from, b.to)));
  }
  return all;
}

}  // namespace

TEST_CASE("PT chunk: a segment compresses returns to calls made in it into TNT bits") {
  auto insns = decoder::InstructionDecoder::create().value();
  Code code;
  decoder::BlockCache cache(insns, *code.reader);
  const auto run = blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}, {0x33, 0x33},
                           {0x17, 0x1e}, {0x22, 0x27}, {0x2a, 0x2b}});
  auto segment = decoder::encode_pt_segment(B, branches_of(run), cache);
  REQUIRE(segment.ok());
  REQUIRE(segment->has_value());
  const std::vector<uint8_t>& bytes = (*segment)->bytes;
  // call rdx and jmp rax: TIPs; both rets: TNT bits.
  CHECK(count_packets(bytes, ppt_tip) == 2);
  auto decoded = decoder::decode_pt_segment(bytes.data(), bytes.size(), B, B + 0x2a, *code.reader);
  REQUIRE(decoded.has_value());
  CHECK(decoded->branches == branches_of(run));

  // A segment that begins inside func has not seen its call: the ret is a TIP.
  auto inside = decoder::encode_pt_segment(B + 0x2d, {{B + 0x31, B + 0x0e}}, cache);
  REQUIRE(inside.ok());
  REQUIRE(inside->has_value());
  CHECK(count_packets((*inside)->bytes, ppt_tip) == 1);
}

TEST_CASE("PT chunk: sealed chunks are PT segments that read back exactly, with their stacks") {
  for (bool stacks : {false, true}) {
    CAPTURE(stacks);
    Code code;
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    const std::vector<Branch> all = fill(trace, 5 * BlockTrace::kChunkBranches + 100, stacks);
    CHECK(trace.pt_chunks() == 5);
    CHECK(trace.explicit_chunks() == 0);
    for (uint64_t seq = 0; seq < all.size(); ++seq) {
      REQUIRE(trace.at(seq) == all[seq]);
      if (stacks) {
        REQUIRE(trace.stack_at(seq) == stack_for(seq));
      }
    }
    // Drops still go a branch at a time.
    trace.resize(3000);
    REQUIRE(trace.first_sequence() == all.size() - 3000);
    REQUIRE(trace.oldest_begin() == all[all.size() - 3001].to);
    for (uint64_t seq = trace.first_sequence(); seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);
  }
}

TEST_CASE("PT chunk: a chunk with a hardware gap, or without a code reader, stays explicit") {
  Code code;
  BlockTrace trace(B, 100000);
  trace.set_code(code.reader);
  std::vector<Branch> all = fill(trace, 500, false);
  REQUIRE(trace.append(decoder::kGapAddress, B));  // lost trace, resumed at B
  all.push_back({decoder::kGapAddress, B});
  for (const Branch& b : fill(trace, 2 * BlockTrace::kChunkBranches, false)) all.push_back(b);
  // Sealed: [0, 1024) with the gap, [1024, 2048) without.
  CHECK(trace.explicit_chunks() == 1);
  CHECK(trace.pt_chunks() == 1);
  for (uint64_t seq = 0; seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);

  BlockTrace plain(B, 100000);
  fill(plain, 2 * BlockTrace::kChunkBranches + 1, false);
  CHECK(plain.pt_chunks() == 0);
  CHECK(plain.explicit_chunks() == 2);
}

TEST_CASE("PT chunk: code that changed under a sealed chunk reads as gaps, never as other branches") {
  Code code;
  BlockTrace trace(B, 100000);
  trace.set_code(code.reader);
  const std::vector<Branch> all = fill(trace, 2 * BlockTrace::kChunkBranches + 10, true);
  REQUIRE(trace.pt_chunks() == 2);
  // The nop at B+0x2a becomes cld: the same path, other code.
  code.bytes[0x2a] = 0xfc;
  for (uint64_t seq = 0; seq < 2 * BlockTrace::kChunkBranches; ++seq) {
    const Branch b = trace.at(seq);
    REQUIRE(b.from == decoder::kGapAddress);
    // The last of each chunk goes where the next chunk's first block begins.
    REQUIRE(b.to == ((seq + 1) % BlockTrace::kChunkBranches == 0 ? all[seq].to : decoder::kGapAddress));
    // The snapshots do not depend on the code.
    REQUIRE(trace.stack_at(seq) == stack_for(seq));
  }
  for (uint64_t seq = 2 * BlockTrace::kChunkBranches; seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);
  const std::vector<Block> bl = trace.blocks(trace.first_sequence(), B);
  REQUIRE(bl.size() == all.size() + 1);
  CHECK(bl[0] == Block{B, decoder::kGapAddress});

  // Code that is not readable any more (unmapped) reads as gaps too.
  trace.set_code(std::make_shared<decoder::BufferReader>(B, nullptr, 0));
  CHECK(trace.at(5).from == decoder::kGapAddress);
}

TEST_CASE("PT chunk: a read over code changed into a jump to itself ends, as gaps") {
  Code code;
  BlockTrace trace(B, 100000);
  trace.set_code(code.reader);
  const std::vector<Branch> all = fill(trace, BlockTrace::kChunkBranches + 10, false);
  REQUIRE(trace.pt_chunks() == 1);
  // `dec ecx; jne loop1` becomes `jmp .; jne loop1`: the walk from B would
  // follow the jump for ever while the chunk's TNT bits wait.
  code.bytes[0x05] = 0xeb;
  code.bytes[0x06] = 0xfe;
  CHECK(trace.at(0).from == decoder::kGapAddress);
  CHECK(trace.at(BlockTrace::kChunkBranches - 1).to == all[BlockTrace::kChunkBranches - 1].to);
  for (uint64_t seq = BlockTrace::kChunkBranches; seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);
}

TEST_CASE("PT chunk: a loop costs a fraction of a byte a branch") {
  Code code;
  BlockTrace loop(B, std::size_t{1} << 30);
  loop.set_code(code.reader);
  for (int i = 0; i < 1000000; ++i) loop.append(B + 0x07, B + 0x05, {0x7ffc0000, 0x7ffc0100});
  CHECK(loop.pt_chunks() == 1000000 / BlockTrace::kChunkBranches);
  // The open chunk's structs (32 KiB) plus about 2 bits a branch.
  CHECK(loop.memory_bytes() < 1000000 / 3);

  // The signal pass is PT's worst: 7 IP packets (3 bytes each) and a
  // TIP.PGD/PGE pair in 12 branches. trace_memory_bench.py measures real
  // programs (docs/performance.md).
  BlockTrace mixed(B, std::size_t{1} << 30);
  mixed.set_code(code.reader);
  fill(mixed, 1000000, false);
  CHECK(mixed.pt_chunks() == 1000000 / BlockTrace::kChunkBranches);
  CHECK(mixed.memory_bytes() < 1000000 * 3);
}

TEST_CASE("PT chunk: whole segments of any length are chunks of their own, through drops, resize and reads") {
  for (bool stacks : {false, true}) {
    CAPTURE(stacks);
    auto insns = decoder::InstructionDecoder::create().value();
    Code code;
    decoder::BlockCache cache(insns, *code.reader);
    BlockTrace trace(B, 100000);
    trace.set_code(code.reader);
    const std::vector<Branch> p = pass();
    std::vector<Branch> all;
    std::vector<StackSnapshot> all_stacks;
    std::size_t segments = 0;
    // Segments of 1, 7, 12, 30, ... branches, with software-tracer
    // branches between some of them (sealed early into short chunks).
    for (std::size_t len : {std::size_t{1}, std::size_t{7}, std::size_t{12}, std::size_t{30}, std::size_t{500},
                            std::size_t{2000}, std::size_t{3}}) {
      const uint64_t begin = all.empty() ? B : all.back().to;
      std::vector<Branch> seg;
      std::vector<StackSnapshot> seg_stacks;
      for (std::size_t i = 0; i < len; ++i) {
        seg.push_back(p[(all.size() + i) % p.size()]);
        seg_stacks.push_back(stack_for(all.size() + i));
      }
      auto encoded = decoder::encode_pt_segment(begin, seg, cache);
      REQUIRE(encoded.ok());
      REQUIRE(encoded->has_value());
      const std::vector<uint8_t> bytes = (*encoded)->bytes;
      REQUIRE(trace.append_pt_segment(bytes, seg, stacks ? &seg_stacks : nullptr));
      ++segments;
      // Stored as given.
      const auto stored = trace.stored_segments(all.size());
      REQUIRE(stored.size() == 1);
      CHECK(stored[0].first_sequence == all.size());
      CHECK(stored[0].count == len);
      CHECK(std::vector<uint8_t>(stored[0].packets.begin(), stored[0].packets.end()) == bytes);
      all.insert(all.end(), seg.begin(), seg.end());
      all_stacks.insert(all_stacks.end(), seg_stacks.begin(), seg_stacks.end());
      if (len == 12 || len == 500) {
        for (std::size_t i = 0; i < 5; ++i) {
          const Branch b = p[all.size() % p.size()];
          const StackSnapshot s = stack_for(all.size());
          REQUIRE((stacks ? trace.append(b.from, b.to, s) : trace.append(b.from, b.to)));
          all.push_back(b);
          all_stacks.push_back(s);
        }
      }
    }
    CHECK(trace.pt_chunks() >= segments);
    auto check_reads = [&] {
      // Backwards and forwards, as a cursor and a document read.
      for (uint64_t seq = all.size(); seq-- > trace.first_sequence();) {
        REQUIRE(trace.at(seq) == all[seq]);
        if (stacks) REQUIRE(trace.stack_at(seq) == all_stacks[seq]);
      }
      for (uint64_t seq = trace.first_sequence(); seq < all.size(); ++seq) REQUIRE(trace.at(seq) == all[seq]);
    };
    check_reads();
    // Packets that do not decode to the branches given: stored as branches.
    const std::vector<Branch> wrong = {p[all.size() % p.size()]};
    const std::vector<StackSnapshot> wrong_stacks = {stack_for(all.size())};
    const std::size_t pt_before = trace.pt_chunks();
    const std::vector<uint8_t> garbage(40, 0x55);
    REQUIRE(trace.append_pt_segment(garbage, wrong, stacks ? &wrong_stacks : nullptr));
    all.push_back(wrong[0]);
    all_stacks.push_back(wrong_stacks[0]);
    CHECK(trace.pt_chunks() == pt_before);
    check_reads();
    // Drops a branch at a time, into and through chunks of every size.
    for (std::size_t keep : {std::size_t{2500}, std::size_t{2040}, std::size_t{530}, std::size_t{520}, std::size_t{4},
                             std::size_t{1}}) {
      CAPTURE(keep);
      trace.resize(keep);
      REQUIRE(trace.first_sequence() == all.size() - keep);
      REQUIRE(trace.oldest_begin() == all[all.size() - keep - 1].to);
      check_reads();
    }
  }
}

namespace {

// A trace with `before` branches of passes, then a PT segment of `length`
// branches whose first `handed_out` are appended one by one first (what
// the hardware backend hands out at a stop in the middle of the segment).
struct HandedOut {
  bool stacks = false;
  Code code;
  decoder::InstructionDecoder insns = decoder::InstructionDecoder::create().value();
  decoder::BlockCache cache{insns, *code.reader};
  BlockTrace trace;
  std::vector<Branch> all;
  std::vector<StackSnapshot> all_stacks;
  std::vector<Branch> segment;
  std::vector<StackSnapshot> segment_stacks;
  std::vector<uint8_t> bytes;
  uint64_t first = 0;  // the segment's first sequence

  HandedOut(bool with_stacks, std::size_t capacity, OverflowPolicy policy = OverflowPolicy::DropOldest)
      : stacks(with_stacks), trace(B, capacity, policy) {
    trace.set_code(code.reader);
  }
  void add(const Branch& b, const StackSnapshot& s) {
    REQUIRE((stacks ? trace.append(b.from, b.to, s) : trace.append(b.from, b.to)));
    all.push_back(b);
    all_stacks.push_back(s);
  }
  void build(std::size_t before, std::size_t length) {
    const std::vector<Branch> p = pass();
    for (std::size_t i = 0; i < before; ++i) add(p[i % p.size()], stack_for(i));
    first = all.size();
    for (std::size_t i = 0; i < length; ++i) {
      segment.push_back(p[(first + i) % p.size()]);
      segment_stacks.push_back(stack_for(first + i));
    }
    auto encoded = decoder::encode_pt_segment(all.empty() ? B : all.back().to, segment, cache);
    REQUIRE(encoded.ok());
    REQUIRE(encoded->has_value());
    bytes = (*encoded)->bytes;
  }
  void hand_out(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) add(segment[i], segment_stacks[i]);
  }
  bool complete(std::size_t handed_out, std::span<const uint8_t> packets) {
    const bool ok = trace.append_pt_segment(packets, segment, stacks ? &segment_stacks : nullptr, handed_out);
    for (std::size_t i = handed_out; i < segment.size() && all.size() < trace.end_sequence(); ++i) {
      all.push_back(segment[i]);
      all_stacks.push_back(segment_stacks[i]);
    }
    return ok;
  }
  // Every branch has the number it was given, once.
  void check_reads() {
    REQUIRE(trace.end_sequence() == all.size());
    for (uint64_t seq = all.size(); seq-- > trace.first_sequence();) {
      REQUIRE(trace.at(seq) == all[seq]);
      if (stacks) REQUIRE(trace.stack_at(seq) == all_stacks[seq]);
    }
  }
  bool stored_whole() const {
    const auto stored = trace.stored_segments(first);
    return !stored.empty() && stored[0].first_sequence == first && stored[0].count == segment.size() &&
           std::vector<uint8_t>(stored[0].packets.begin(), stored[0].packets.end()) == bytes;
  }
};

}  // namespace

TEST_CASE("PT chunk: a segment completed after its first branches were handed out replaces them, same numbers") {
  for (bool stacks : {false, true}) {
    CAPTURE(stacks);
    SECTION("held open: the whole segment, longer than a chunk, takes the handed-out branches' place") {
      HandedOut h(stacks, 100000);
      h.build(10, 3000);
      h.trace.hold_open(h.first);
      h.hand_out(2500);  // past kChunkBranches: the hold keeps them unsealed
      REQUIRE(h.trace.pt_chunks() == 0);
      REQUIRE(h.complete(2500, h.bytes));
      CHECK(h.stored_whole());
      // The 10 before it, sealed as a chunk of their own, and the segment.
      CHECK(h.trace.pt_chunks() == 2);
      CHECK(h.trace.explicit_chunks() == 0);
      h.check_reads();
      // Software branches after it go on from its end.
      h.add(pass()[h.all.size() % pass().size()], stack_for(h.all.size()));
      h.check_reads();
      CHECK(h.trace.oldest_begin() == B);
    }
    SECTION("the ring drops older branches to make room, never the handed-out ones") {
      HandedOut h(stacks, 3005);
      h.build(10, 3000);
      h.trace.hold_open(h.first);
      h.hand_out(2000);
      REQUIRE(h.complete(2000, h.bytes));
      CHECK(h.stored_whole());
      CHECK(h.trace.first_sequence() == 5);
      h.check_reads();
    }
    SECTION("sealed meanwhile (no hold): the rest is appended as branches") {
      constexpr std::size_t K = BlockTrace::kChunkBranches;
      HandedOut h(stacks, 4 * K);
      h.build(10, 3 * K);
      constexpr std::size_t handed_out = 2 * K + K / 2;
      h.hand_out(handed_out);
      REQUIRE(h.trace.pt_chunks() + h.trace.explicit_chunks() == 2);
      REQUIRE(h.complete(handed_out, h.bytes));
      CHECK_FALSE(h.stored_whole());
      h.check_reads();
    }
    SECTION("handed-out branches that are not the segment's: the rest is appended as branches") {
      HandedOut h(stacks, 100000);
      h.build(10, 300);
      h.trace.hold_open(h.first);
      h.hand_out(50);
      h.add({h.segment[50].from, B}, h.segment_stacks[50]);  // the store holds another branch there
      for (std::size_t i = 51; i < 100; ++i) h.add(h.segment[i], h.segment_stacks[i]);
      REQUIRE(h.complete(100, h.bytes));
      CHECK(h.trace.stored_segments(h.first).empty());
      h.check_reads();
    }
    SECTION("packets that do not decode to the branches: the rest is appended as branches") {
      HandedOut h(stacks, 100000);
      h.build(10, 300);
      h.trace.hold_open(h.first);
      h.hand_out(100);
      const std::vector<uint8_t> garbage(40, 0x55);
      REQUIRE(h.complete(100, garbage));
      CHECK(h.trace.stored_segments(0).empty());
      h.check_reads();
      // More handed out than the segment has: nothing appended, nothing lost.
      const uint64_t end = h.trace.end_sequence();
      const std::vector<StackSnapshot> one_stack = {h.segment_stacks[0]};
      REQUIRE(h.trace.append_pt_segment(h.bytes, {h.segment[0]}, stacks ? &one_stack : nullptr, 5));
      CHECK(h.trace.end_sequence() == end);
    }
    SECTION("full under the stop policy: as many of the rest as fit, as branches") {
      HandedOut h(stacks, 10 + 200, OverflowPolicy::Stop);
      h.build(10, 300);
      h.trace.hold_open(h.first);
      h.hand_out(100);
      REQUIRE_FALSE(h.complete(100, h.bytes));
      CHECK(h.trace.end_sequence() == 210);
      CHECK(h.trace.stored_segments(0).empty());
      h.check_reads();
    }
  }
}

TEST_CASE("PT chunk: a hold keeps at most kMaxHeldBranches open, then they are sealed as any others") {
  Code code;
  BlockTrace trace(B, 1000000);
  trace.set_code(code.reader);
  fill(trace, 100, false);
  trace.hold_open(100);
  const std::vector<Branch> all = fill(trace, BlockTrace::kMaxHeldBranches + 10, false);
  // Sealed again once the hold went past its bound: the open structs are
  // below a chunk's worth.
  CHECK(trace.pt_chunks() > 0);
  // ... and their room is given back: the store is its chunks and about
  // a chunk's worth of structs again.
  CHECK(trace.memory_bytes() < BlockTrace::kMaxHeldBranches * sizeof(Branch));
  for (uint64_t seq = 100; seq < trace.end_sequence(); ++seq) REQUIRE(trace.at(seq) == all[seq - 100]);
}

// A SegmentPacker keeps the blocks it decoded from one segment to the next
// (a loop's blocks decoded once a recording, not once a chunk); a kept
// block is used again only over the same bytes. Here the code changes
// between two segments under the same block (the jne at B+0x07 becomes a
// two-byte nop): a kept block would still say "not-taken jne" there, an
// extra TNT bit the check refuses, and the chunk would stay explicit.
TEST_CASE("PT chunk: a packer keeps decoded blocks across segments, never over changed code") {
  Code code;
  decoder::SegmentPacker packer(decoder::InstructionDecoder::create().value());
  const std::vector<Branch> first = branches_of(blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}}));
  auto packed = packer.pack(*code.reader, B, first);
  REQUIRE(packed.has_value());
  auto fresh_insns = decoder::InstructionDecoder::create().value();
  auto fresh = decoder::pack_pt_segment(fresh_insns, *code.reader, B, first);
  REQUIRE(fresh.has_value());
  CHECK(packed->bytes == fresh->bytes);
  // The same code again: the kept blocks serve, with the same packets.
  auto again = packer.pack(*code.reader, B, first);
  REQUIRE(again.has_value());
  CHECK(again->bytes == fresh->bytes);

  code.bytes[0x07] = 0x66;  // jne loop1 -> nop (66 90)
  code.bytes[0x08] = 0x90;
  const std::vector<Branch> second = {{B + 0x09, B + 0x2d}, {B + 0x31, B + 0x0e}};
  auto changed = packer.pack(*code.reader, B + 0x05, second);
  auto changed_fresh = decoder::pack_pt_segment(fresh_insns, *code.reader, B + 0x05, second);
  REQUIRE(changed_fresh.has_value());
  REQUIRE(changed.has_value());
  CHECK(changed->bytes == changed_fresh->bytes);
  CHECK(changed->code_hash == changed_fresh->code_hash);
}

TEST_CASE("BlockCache: after use_reader a block is decoded again where the bytes changed") {
  auto insns = decoder::InstructionDecoder::create().value();
  Code code;
  decoder::BlockCache cache(insns, *code.reader);
  const Block block{B + 0x05, B + 0x09};  // dec ecx; jne loop1; call func
  REQUIRE(cache.get(block).instructions.size() == 3);
  CHECK(cache.get(block).instructions[1].kind == decoder::ControlKind::ConditionalJump);

  std::vector<uint8_t> same = code.bytes;
  decoder::BufferReader same_reader(B, same.data(), same.size());
  cache.use_reader(same_reader);
  CHECK(cache.get(block).instructions.size() == 3);
  CHECK(cache.size() == 1);

  std::vector<uint8_t> changed = code.bytes;
  changed[0x07] = 0x66;
  changed[0x08] = 0x90;
  decoder::BufferReader changed_reader(B, changed.data(), changed.size());
  cache.use_reader(changed_reader);
  const decoder::DecodedBlock& now = cache.get(block);
  REQUIRE(now.complete);
  REQUIRE(now.instructions.size() == 3);
  CHECK(now.instructions[1].kind == decoder::ControlKind::None);

  // Unreadable now: not the old block either.
  decoder::BufferReader nothing(B, changed.data(), 0);
  cache.use_reader(nothing);
  CHECK_FALSE(cache.get(block).complete);
}

}  // namespace test_pt_chunk
