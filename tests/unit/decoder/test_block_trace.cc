#include <catch2/catch.hpp>

#include "decoder/block_trace.h"

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
