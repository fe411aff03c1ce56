#include <catch2/catch.hpp>

#include <random>

#include "decoder/branch_chunk.h"

using decoder::Branch;
using decoder::BranchChunkWriter;
using decoder::StackSnapshot;

namespace {

struct Sample {
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;
};

// Branches of every shape the codec treats apart: a hot loop (predicted
// target, same stack), calls and returns (stack moves), far jumps across
// the address space, the extremes of 64 bits, and random noise.
Sample mixed_sample(std::size_t count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Sample s;
  StackSnapshot stack{0x7ffc0000, 0x7ffc0100};
  uint64_t pc = 0x401000;
  for (std::size_t i = 0; i < count; ++i) {
    Branch b;
    switch (rng() % 6) {
      case 0: b = {0x401010, 0x401000}; break;                      // the loop
      case 1: b = {pc + rng() % 64, 0x7f0000000000 + rng() % 4096}; stack.rsp -= 8; break;  // call
      case 2: b = {pc + 3, pc - rng() % 100000}; stack.rsp += 8; stack.rbp = rng(); break;  // ret
      case 3: b = {UINT64_MAX, 0}; break;
      case 4: b = {0, UINT64_MAX}; stack = {UINT64_MAX, 0}; break;
      default: b = {rng(), rng()}; stack = {rng(), rng()}; break;
    }
    pc = b.to;
    s.branches.push_back(b);
    s.stacks.push_back(stack);
  }
  return s;
}

}  // namespace

TEST_CASE("A branch chunk decodes to exactly what was written") {
  for (bool with_stacks : {true, false}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      Sample s = mixed_sample(1024, seed);
      BranchChunkWriter writer(0x400000, with_stacks);
      for (std::size_t i = 0; i < s.branches.size(); ++i) writer.add(s.branches[i], s.stacks[i]);
      std::vector<uint8_t> bytes = writer.take();
      std::vector<Branch> branches;
      std::vector<StackSnapshot> stacks;
      REQUIRE(decode_branch_chunk(bytes, 0x400000, with_stacks, s.branches.size(), branches, stacks));
      REQUIRE(branches == s.branches);
      if (with_stacks) REQUIRE(stacks == s.stacks);
      else REQUIRE(stacks.empty());
      // A wrong count or cut bytes are refused, never read past the end.
      REQUIRE_FALSE(decode_branch_chunk(bytes, 0x400000, with_stacks, s.branches.size() + 1, branches, stacks));
      REQUIRE_FALSE(decode_branch_chunk(bytes, 0x400000, with_stacks, s.branches.size() - 1, branches, stacks));
      bytes.pop_back();
      REQUIRE_FALSE(decode_branch_chunk(bytes, 0x400000, with_stacks, s.branches.size(), branches, stacks));
    }
  }
}

TEST_CASE("A branch of a hot loop costs one byte in a chunk") {
  BranchChunkWriter writer(0x401000, true);
  for (int i = 0; i < 1000; ++i) writer.add({0x401010, 0x401000}, {0x7ffc0000, 0x7ffc0100});
  // The first branch spells its target and stack out; the rest are predicted.
  REQUIRE(writer.size() <= 1000 + 24);
}

TEST_CASE("A loop that calls a function costs a byte a branch in a chunk: the stack's moves are predicted") {
  // loop: call f (rsp R) ; f: ret (rsp R-8, rbp moved by f) ; jmp loop (rsp R).
  Sample s;
  const uint64_t rsp = 0x7ffc0000;
  for (int i = 0; i < 300; ++i) {
    const uint64_t rbp = 0x7ffc0100 + 16 * static_cast<uint64_t>(i);  // a frame pointer that walks
    s.branches.push_back({0x401005, 0x402000});
    s.stacks.push_back({rsp, rbp});
    s.branches.push_back({0x402010, 0x40100a});
    s.stacks.push_back({rsp - 8, rbp + 0x40});
    s.branches.push_back({0x401010, 0x401000});
    s.stacks.push_back({rsp, rbp + 16});
  }
  BranchChunkWriter writer(0x401000, true);
  for (std::size_t i = 0; i < s.branches.size(); ++i) writer.add(s.branches[i], s.stacks[i]);
  // The first round spells targets and stacks out; every move after it is
  // the one its address saw the round before (with "unchanged" as the
  // only prediction, each return and jump back took two bytes more).
  REQUIRE(writer.size() <= s.branches.size() + 30);
  const std::vector<uint8_t> bytes = writer.take();
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;
  REQUIRE(decode_branch_chunk(bytes, 0x401000, true, s.branches.size(), branches, stacks));
  REQUIRE(branches == s.branches);
  REQUIRE(stacks == s.stacks);
}
