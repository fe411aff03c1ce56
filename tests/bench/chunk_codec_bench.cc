// Explicit branch chunk benchmark (not a test): how long encoding and
// decoding a chunk of branches with stacks takes (decoder/branch_chunk.h;
// as many branches as a BlockTrace's chunk holds, encoded from records as
// the translating tracer's log holds them), the work btstub's thread and its packing worker do for
// every chunk they do not pack as PT. Prints a table for
// docs/performance.md.
//
// The branches walk a synthetic control-flow graph of 300 blocks (4-43
// bytes each, two successors) the way a program's loops do: each block
// goes to its usual successor with the given probability; a quarter of the
// blocks move rsp by a word (as their pushes or pops would, the same each
// time) and a sixteenth set rbp from it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/branch_chunk.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kChunkBranches = decoder::BlockTrace::kChunkBranches;
constexpr std::size_t kChunks = 200;
constexpr int kRounds = 7;

struct Chunk {
  uint64_t previous_to = 0;
  std::vector<decoder::Branch> branches;
  std::vector<decoder::StackSnapshot> stacks;
  // The same, as the translating tracer's log holds them (what its
  // encoding reads).
  std::vector<decoder::StackedBranch> records;
};

std::vector<Chunk> make_chunks(int usual_percent) {
  std::mt19937_64 rng(1);
  struct Block {
    uint64_t start, length;
    std::size_t next[2];
    uint64_t rsp_move;
    bool sets_rbp;
  };
  std::vector<Block> blocks(300);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    blocks[i] = {0x555555550000 + i * 64 + rng() % 16, 4 + rng() % 40, {rng() % blocks.size(), rng() % blocks.size()},
                 rng() % 4 == 0 ? (rng() % 2 ? uint64_t{8} : ~uint64_t{7}) : 0, rng() % 16 == 0};
  }
  std::vector<Chunk> chunks(kChunks);
  std::size_t at = 0;
  uint64_t rsp = 0x7ffe0000, rbp = 0x7ffe1000, previous_to = blocks[0].start;
  for (Chunk& chunk : chunks) {
    chunk.previous_to = previous_to;
    for (std::size_t i = 0; i < kChunkBranches; ++i) {
      const Block& block = blocks[at];
      const std::size_t next = block.next[static_cast<int>(rng() % 100) < usual_percent ? 0 : 1];
      rsp += block.rsp_move;  // the block's own pushes or pops, before its branch
      if (block.sets_rbp) rbp = rsp + 16;
      chunk.branches.push_back({block.start + block.length, blocks[next].start});
      chunk.stacks.push_back({rsp, rbp});
      chunk.records.push_back({chunk.branches.back(), chunk.stacks.back()});
      previous_to = blocks[next].start;
      at = next;
    }
  }
  return chunks;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run(int usual_percent) {
  const std::vector<Chunk> chunks = make_chunks(usual_percent);
  std::vector<std::vector<uint8_t>> encoded(chunks.size());
  std::vector<double> encode_ns, decode_ns;
  std::size_t bytes = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto start = Clock::now();
    bytes = 0;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      decoder::BranchChunkWriter writer(chunks[c].previous_to, true);
      writer.add(std::span<const decoder::StackedBranch>(chunks[c].records));
      encoded[c] = writer.take();
      bytes += encoded[c].size();
    }
    encode_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    start = Clock::now();
    std::vector<decoder::Branch> branches;
    std::vector<decoder::StackSnapshot> stacks;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      if (!decoder::decode_branch_chunk(encoded[c], chunks[c].previous_to, true, kChunkBranches, branches, stacks) ||
          branches != chunks[c].branches || stacks != chunks[c].stacks) {
        std::printf("chunk %zu does not decode to what was written\n", c);
        return;
      }
    }
    decode_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
  }
  const double branches = static_cast<double>(kChunks * kChunkBranches);
  std::printf("| %d%% | %.2f | %.1f | %.1f |\n", usual_percent, static_cast<double>(bytes) / branches,
              median(encode_ns) / branches, median(decode_ns) / branches);
}

}  // namespace

int main() {
  std::printf("| usual successor taken | bytes a branch | encode ns a branch | decode (and compare) ns a branch |\n");
  std::printf("|---:|---:|---:|---:|\n");
  for (int usual : {50, 80, 95, 100}) run(usual);
  return 0;
}
