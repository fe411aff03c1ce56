#pragma once
// Sealing BlockTrace chunks as PT segments off the recording's path.
//
// Packing a chunk (encode_pt_segment, then decoding it back to check it)
// costs about 0.5 µs a branch. Done where the tracer handles a trace stop,
// the program waits for it: record_bench's recording took 5-8% longer with
// it. With a ChunkPacker (BlockTrace::set_packer) a sealed chunk keeps its
// branches as they are, and a PackJob goes to the packer; its PT segment
// replaces them when the trace collects it (BlockTrace::collect_packed),
// or, when none comes or the packer is busy, the explicit format
// (decoder/branch_chunk.h) does. The job carries a copy of
// the code its walk reads (CodeSnapshot), read when the chunk is sealed,
// as packing there would: the program's memory is read by the tracer, and
// the packer touches nothing but its job. The result is checked as a
// packing in place is: kept only if it decodes to exactly the branches.
//
// The packer runs jobs where it likes: stub/tracing/background_packer.h
// runs them on a worker thread, while the tracer waits for the program.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "decoder/branch.h"
#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"
#include "decoder/pt_chunk.h"

namespace decoder {

// The code under a chunk's blocks, read once.
class CodeSnapshot final : public CodeReader {
 public:
  // The pages under the blocks of `branches` (the first begins at
  // `previous_to`) and at the last branch's target, read through `code`;
  // null when that is more than `max_pages` pages (a block that cannot be
  // walked, or a wide one: such a chunk is packed in place).
  static std::shared_ptr<CodeSnapshot> take(CodeReader& code, uint64_t previous_to,
                                            const std::vector<Branch>& branches, std::size_t max_pages);
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override;  // changes nothing

 private:
  static constexpr uint64_t kPageSize = 4096;
  std::map<uint64_t, std::vector<uint8_t>> pages_;  // page address -> its readable bytes
};

struct PackJob {
  uint64_t first_sequence = 0;
  uint64_t previous_to = 0;
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;  // one a branch, or none when the trace keeps none
  std::shared_ptr<CodeSnapshot> code;  // the job's own: read by whoever runs it
};

struct PackResult {
  uint64_t first_sequence = 0;
  uint32_t count = 0;
  // The chunk's bytes (packets, then the stack stream), or nullopt: it
  // stays explicit.
  std::optional<PackedPtSegment> segment;
  uint32_t packet_bytes = 0;
};

// Packs `job` (over its snapshot) as BlockTrace would in place.
PackResult run_pack_job(const PackJob& job, SegmentPacker& packer);

// One trace's finished jobs: put by the packer, taken by the trace.
class PackInbox {
 public:
  void expect_one();  // a job was submitted for this inbox
  void put(PackResult result);
  std::vector<PackResult> take();
  std::size_t pending() const;  // submitted, not put yet
  void wait_idle();             // until every submitted job was put

 private:
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<PackResult> done_;
  // done_ is not empty. The trace looks at every trace stop, mostly to
  // find nothing: that look takes no lock.
  std::atomic<bool> has_done_{false};
  std::size_t pending_ = 0;
};

class ChunkPacker {
 public:
  virtual ~ChunkPacker() = default;
  // Runs `job` later and puts its result into `inbox` (a job never run,
  // as the packer goes away, is put with no segment).
  virtual void submit(std::shared_ptr<PackInbox> inbox, PackJob job) = 0;
};

}  // namespace decoder
