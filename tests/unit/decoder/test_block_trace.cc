#include <catch2/catch.hpp>

#include <deque>
#include <random>

#include "decoder/block_trace.h"

namespace test_block_trace {  // this file's own names, apart in a unity build

using decoder::Block;
using decoder::BlockTrace;
using decoder::OverflowPolicy;

TEST_CASE("BlockTrace turns branches into blocks ending at the current pc") {
  BlockTrace trace(0x100, 8);
  REQUIRE(trace.append(0x110, 0x200));
  REQUIRE(trace.append(0x208, 0x120));
  auto blocks = trace.blocks(trace.first_sequence(), 0x130);
  REQUIRE(blocks == std::vector<Block>{{0x100, 0x110}, {0x200, 0x208}, {0x120, 0x130}});
  // Blocks since branch 1: begins at branch 0's target.
  REQUIRE(trace.blocks(1, 0x130) == std::vector<Block>{{0x200, 0x208}, {0x120, 0x130}});
  REQUIRE(trace.blocks(2, 0x130) == std::vector<Block>{{0x120, 0x130}});
}

TEST_CASE("BlockTrace drops the oldest branches and keeps numbering") {
  BlockTrace trace(0x100, 2);
  trace.append(0x110, 0x200);
  trace.append(0x210, 0x300);
  trace.append(0x310, 0x400);
  REQUIRE(trace.size() == 2);
  REQUIRE(trace.first_sequence() == 1);
  REQUIRE(trace.end_sequence() == 3);
  REQUIRE(trace.oldest_begin() == 0x200);
  REQUIRE(trace.lost_since(0));
  REQUIRE_FALSE(trace.lost_since(1));
  REQUIRE(trace.blocks(1, 0x410) == std::vector<Block>{{0x200, 0x210}, {0x300, 0x310}, {0x400, 0x410}});
}

TEST_CASE("BlockTrace under the stop policy refuses to overflow") {
  BlockTrace trace(0x100, 1, OverflowPolicy::Stop);
  REQUIRE(trace.append(0x110, 0x200));
  REQUIRE_FALSE(trace.append(0x210, 0x300));
  REQUIRE(trace.size() == 1);
  REQUIRE(trace.at(0) == decoder::Branch{0x110, 0x200});
}

TEST_CASE("BlockTrace resize keeps the newest branches") {
  BlockTrace trace(0x100, 4);
  for (uint64_t i = 0; i < 4; ++i) trace.append(0x1000 + i, 0x2000 + i);
  trace.resize(2);
  REQUIRE(trace.capacity() == 2);
  REQUIRE(trace.first_sequence() == 2);
  REQUIRE(trace.oldest_begin() == 0x2001);
  REQUIRE(trace.at(3) == decoder::Branch{0x1003, 0x2003});
  trace.append(0x1004, 0x2004);
  REQUIRE(trace.first_sequence() == 3);
}

TEST_CASE("BTS buffer sizes are counted in 24-byte records") {
  REQUIRE(decoder::bts_records_for_bytes(64 * 1024) == 2730);
  REQUIRE(decoder::bts_records_for_bytes(1) == 1);
}

TEST_CASE("BlockTrace keeps the stack snapshot of each branch through drops and resizes") {
  BlockTrace trace(0x100, 2);
  REQUIRE_FALSE(trace.has_stacks());
  trace.append(0x110, 0x200, {0x7000, 0x7100});
  trace.append(0x210, 0x300, {0x6ff8, 0x7100});
  trace.append(0x310, 0x400, {0x6ff0, 0x6ff8});
  REQUIRE(trace.has_stacks());
  REQUIRE(trace.first_sequence() == 1);
  REQUIRE(trace.stack_at(1) == decoder::StackSnapshot{0x6ff8, 0x7100});
  REQUIRE(trace.stack_at(2) == decoder::StackSnapshot{0x6ff0, 0x6ff8});
  trace.resize(1);
  REQUIRE(trace.stack_at(2) == decoder::StackSnapshot{0x6ff0, 0x6ff8});
  trace.resize(3);
  trace.append(0x410, 0x500, {0x6fe8, 0x6ff0});
  REQUIRE(trace.stack_at(2) == decoder::StackSnapshot{0x6ff0, 0x6ff8});
  REQUIRE(trace.stack_at(3) == decoder::StackSnapshot{0x6fe8, 0x6ff0});
}

TEST_CASE("BlockTrace capacity is a bound, not an allocation") {
  // A trillion records (24 TB as a BTS buffer) could never be allocated up
  // front; the store grows with what is appended, and drops free the space.
  decoder::BlockTrace trace(0x1000, std::size_t{1} << 40);
  REQUIRE(trace.capacity() == std::size_t{1} << 40);
  REQUIRE(trace.size() == 0);
  for (uint64_t i = 0; i < 100000; ++i) REQUIRE(trace.append(0x2000 + i, 0x3000 + i, {0x7000, 0x7100}));
  REQUIRE(trace.size() == 100000);
  REQUIRE(trace.at(99999) == decoder::Branch{0x2000 + 99999, 0x3000 + 99999});
  trace.resize(10);
  REQUIRE(trace.size() == 10);
  REQUIRE(trace.first_sequence() == 99990);
  REQUIRE(trace.oldest_begin() == 0x3000 + 99989);
  REQUIRE(trace.stack_at(99990) == decoder::StackSnapshot{0x7000, 0x7100});
}

namespace {

// What a BlockTrace must behave like: every branch kept as a plain struct.
struct ModelTrace {
  std::deque<decoder::Branch> branches;
  std::deque<decoder::StackSnapshot> stacks;
  uint64_t first = 0, end = 0, oldest_begin = 0;
  std::size_t capacity = 0;
  void append(decoder::Branch b, decoder::StackSnapshot s) {
    if (branches.size() >= capacity) drop();
    branches.push_back(b);
    stacks.push_back(s);
    ++end;
  }
  void drop() {
    oldest_begin = branches.front().to;
    branches.pop_front();
    stacks.pop_front();
    ++first;
  }
};

void require_same(const BlockTrace& trace, const ModelTrace& model) {
  REQUIRE(trace.first_sequence() == model.first);
  REQUIRE(trace.end_sequence() == model.end);
  REQUIRE(trace.size() == model.branches.size());
  REQUIRE(trace.oldest_begin() == model.oldest_begin);
  // Read in the orders readers use: a cursor walking back, a document forward.
  for (uint64_t seq = model.end; seq-- > model.first;) {
    REQUIRE(trace.at(seq) == model.branches[seq - model.first]);
    REQUIRE(trace.stack_at(seq) == model.stacks[seq - model.first]);
  }
  auto blocks = trace.blocks(model.first, 0x1234);
  REQUIRE(blocks.size() == model.branches.size() + 1);
  REQUIRE(blocks.front().begin == model.oldest_begin);
}

}  // namespace

TEST_CASE("BlockTrace packs its branches into chunks and reads them back exactly") {
  std::mt19937_64 rng(7);
  for (std::size_t capacity : {std::size_t{1}, std::size_t{1000}, BlockTrace::kChunkBranches,
                               BlockTrace::kChunkBranches + 1, std::size_t{2730}, std::size_t{10000}}) {
    CAPTURE(capacity);
    BlockTrace trace(0x401000, capacity);
    ModelTrace model;
    model.capacity = capacity;
    model.oldest_begin = 0x401000;
    decoder::StackSnapshot stack{0x7ffc0000, 0x7ffc0100};
    uint64_t pc = 0x401000;
    for (int round = 0; round < 6; ++round) {
      const std::size_t n = 1 + rng() % 7000;
      for (std::size_t i = 0; i < n; ++i) {
        decoder::Branch b = rng() % 4 ? decoder::Branch{0x401010, 0x401000}
                                      : decoder::Branch{pc + rng() % 300, 0x400000 + rng() % 0x100000};
        if (rng() % 3 == 0) stack.rsp += (rng() % 5) * 8 - 16;
        pc = b.to;
        REQUIRE(trace.append(b.from, b.to, stack));
        model.append(b, stack);
      }
      require_same(trace, model);
      if (round == 3) {
        // Shrinking keeps the newest; growing again keeps them all.
        model.capacity = std::max<std::size_t>(capacity / 3, 1);
        trace.resize(model.capacity);
        while (model.branches.size() > model.capacity) model.drop();
        require_same(trace, model);
        model.capacity = capacity;
        trace.resize(capacity);
      }
    }
    trace.clear(0x5000);
    REQUIRE(trace.size() == 0);
    REQUIRE(trace.oldest_begin() == 0x5000);
    REQUIRE(trace.append(0x5010, 0x6000));
    REQUIRE(trace.at(trace.first_sequence()) == decoder::Branch{0x5010, 0x6000});
    REQUIRE_FALSE(trace.has_stacks());
  }
}

TEST_CASE("BlockTrace costs a few bytes a chunk on a loop") {
  BlockTrace trace(0x401000, std::size_t{1} << 30);
  const std::size_t empty = trace.memory_bytes();
  REQUIRE(empty < 1024);
  for (int i = 0; i < 1000000; ++i) trace.append(0x401010, 0x401000, {0x7ffc0000, 0x7ffc0100});
  // The open chunk's structs (32 KiB) plus, a chunk, its first branch
  // spelled out and the count of the predicted rest.
  REQUIRE(trace.memory_bytes() < 1000000 / 4);
  // It counts what it holds: each chunk's bytes (over 20) and its place.
  REQUIRE(trace.memory_bytes() > 1000000 / BlockTrace::kChunkBranches * 32);
}

TEST_CASE("BlockTrace under the stop policy reports room for a run of branches") {
  BlockTrace trace(0x100, 10, OverflowPolicy::Stop);
  REQUIRE(trace.has_room(10));
  REQUIRE_FALSE(trace.has_room(11));
  for (int i = 0; i < 7; ++i) REQUIRE(trace.append(0x110, 0x100));
  REQUIRE(trace.has_room(3));
  REQUIRE_FALSE(trace.has_room(4));
  REQUIRE_FALSE(trace.has_room(std::size_t{0} - 1));  // no overflow in the sum
}

TEST_CASE("BlockTrace stores a run of branches as it stores them one by one") {
  std::mt19937_64 rng(11);
  for (OverflowPolicy policy : {OverflowPolicy::DropOldest, OverflowPolicy::Stop}) {
    for (std::size_t capacity : {std::size_t{1}, std::size_t{1000}, BlockTrace::kChunkBranches,
                                 BlockTrace::kChunkBranches + 1, std::size_t{2730}, std::size_t{9000},
                                 std::size_t{20000}}) {
      CAPTURE(policy == OverflowPolicy::Stop, capacity);
      BlockTrace runs(0x401000, capacity, policy);
      BlockTrace single(0x401000, capacity, policy);
      decoder::StackSnapshot stack{0x7ffc0000, 0x7ffc0100};
      for (int round = 0; round < 8; ++round) {
        if (round == 4) {  // a hold keeps the open structs past a chunk
          runs.hold_open(runs.end_sequence());
          single.hold_open(single.end_sequence());
        }
        std::vector<decoder::StackedBranch> batch(rng() % 5000);
        for (decoder::StackedBranch& b : batch) {
          b.branch = rng() % 4 ? decoder::Branch{0x401010, 0x401000}
                               : decoder::Branch{0x401000 + rng() % 300, 0x400000 + rng() % 0x100000};
          if (rng() % 3 == 0) stack.rsp += (rng() % 5) * 8 - 16;
          b.stack = stack;
        }
        std::size_t accepted = 0;
        while (accepted < batch.size() &&
               single.append(batch[accepted].branch.from, batch[accepted].branch.to, batch[accepted].stack)) {
          ++accepted;
        }
        REQUIRE(runs.append_stacked(batch) == accepted);
        REQUIRE(runs.first_sequence() == single.first_sequence());
        REQUIRE(runs.end_sequence() == single.end_sequence());
        REQUIRE(runs.explicit_chunks() == single.explicit_chunks());
        REQUIRE(runs.memory_bytes() == single.memory_bytes());
        for (uint64_t seq = runs.first_sequence(); seq < runs.end_sequence(); ++seq) {
          REQUIRE(runs.at(seq) == single.at(seq));
          REQUIRE(runs.stack_at(seq) == single.stack_at(seq));
        }
      }
      if (policy == OverflowPolicy::Stop && capacity <= 2730) REQUIRE(runs.full());  // runs were cut short
    }
  }
}

}  // namespace test_block_trace
