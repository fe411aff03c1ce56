#include <catch2/catch.hpp>

#include <random>

#include "decoder/branch_chunk.h"

namespace test_branch_chunk {  // this file's own names, apart in a unity build

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

TEST_CASE("The branches of a hot loop cost a count in a chunk") {
  BranchChunkWriter writer(0x401000, true);
  for (int i = 0; i < 1000; ++i) writer.add({0x401010, 0x401000}, {0x7ffc0000, 0x7ffc0100});
  // The first branch spells its block, target and stack out; the rest are
  // predicted whole, counted by the chunk's last head.
  const std::vector<uint8_t> bytes = writer.take();
  REQUIRE(bytes.size() <= 24);
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;
  REQUIRE(decode_branch_chunk(bytes, 0x401000, true, 1000, branches, stacks));
  REQUIRE(branches == std::vector<Branch>(1000, Branch{0x401010, 0x401000}));
  REQUIRE(stacks == std::vector<StackSnapshot>(1000, StackSnapshot{0x7ffc0000, 0x7ffc0100}));
}

TEST_CASE("A branch chunk predicts a branch from where its block began, not from its address") {
  // Two blocks end at one indirect jump (0x1010), entered at 0x1000 and
  // at 0x1004, each always going to its own target: by the jump's address
  // its target alternates and each would be written out; by the block's
  // start every branch after the first round is predicted.
  //   0x1000: ... jmp *%rax (0x1010) -> 0x2000: ... jmp 0x1004 (0x2008)
  //   0x1004: ... jmp *%rax (0x1010) -> 0x3000: ... jmp 0x1000 (0x3008)
  Sample s;
  for (int i = 0; i < 250; ++i) {
    s.branches.push_back({0x1010, 0x2000});
    s.branches.push_back({0x2008, 0x1004});
    s.branches.push_back({0x1010, 0x3000});
    s.branches.push_back({0x3008, 0x1000});
  }
  BranchChunkWriter writer(0x1000, false);
  for (const Branch& b : s.branches) writer.add(b, StackSnapshot{});
  const std::vector<uint8_t> bytes = writer.take();
  REQUIRE(bytes.size() <= 32);
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;
  REQUIRE(decode_branch_chunk(bytes, 0x1000, false, s.branches.size(), branches, stacks));
  REQUIRE(branches == s.branches);
}

TEST_CASE("Writers alive at once on one thread keep their own predictions") {
  Sample a = mixed_sample(2000, 7);
  Sample b = mixed_sample(2000, 8);
  BranchChunkWriter first(0x400000, true);
  BranchChunkWriter second(0x400000, true);
  for (std::size_t i = 0; i < 2000; ++i) {
    first.add(a.branches[i], a.stacks[i]);
    second.add(b.branches[i], b.stacks[i]);
  }
  for (auto [writer, sample] : {std::pair{&first, &a}, std::pair{&second, &b}}) {
    const std::vector<uint8_t> bytes = writer->take();
    std::vector<Branch> branches;
    std::vector<StackSnapshot> stacks;
    REQUIRE(decode_branch_chunk(bytes, 0x400000, true, 2000, branches, stacks));
    REQUIRE(branches == sample->branches);
    REQUIRE(stacks == sample->stacks);
  }
}

TEST_CASE("A loop that calls a function costs a count in a chunk: the stack's moves are predicted") {
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
  // the one its block saw the round before (with "unchanged" as the only
  // prediction, each return and jump back would be written out).
  const std::vector<uint8_t> bytes = writer.take();
  REQUIRE(bytes.size() <= 60);
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;
  REQUIRE(decode_branch_chunk(bytes, 0x401000, true, s.branches.size(), branches, stacks));
  REQUIRE(branches == s.branches);
  REQUIRE(stacks == s.stacks);
}

}  // namespace test_branch_chunk
