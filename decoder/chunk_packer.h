#pragma once
// Sealing BlockTrace chunks off the recording's path.
//
// Packing a chunk (encode_pt_segment, then decoding it back to check it)
// costs about 0.5 µs a branch; even the explicit format
// (decoder/branch_chunk.h) costs 25-30 ns a branch, a quarter of the
// tracer's own time while recording. Done where the tracer handles a trace
// stop, the program waits for it. With a ChunkPacker (BlockTrace::set_packer)
// a sealed chunk keeps its branches as they are (a RawChunk the job shares,
// never copied), and a PackJob goes to the packer; the packed form replaces
// them when the trace collects it (BlockTrace::collect_packed). A job with
// a copy of the code its walk reads (CodeSnapshot, read when the chunk is
// sealed, as packing there would) tries a PT segment, checked as a packing
// in place is: kept only if it decodes to exactly the branches. A job
// without one (the packer is behind: a snapshot costs the tracer a read
// of every code page under the chunk) and one whose segment is not kept
// encode the chunk explicitly. The program's memory is read by the tracer;
// the packer touches nothing but its job.
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
#include <span>
#include <vector>

#include "decoder/branch.h"
#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"
#include "decoder/pt_chunk.h"

namespace decoder {

// The pages a CodeSnapshot of `branches` (the first block beginning at
// `previous_to`) takes, sorted, without reading them; nullopt when that is
// more than `max_pages` pages or a block cannot be walked.
std::optional<std::vector<uint64_t>> snapshot_pages(uint64_t previous_to, const std::vector<Branch>& branches,
                                                    std::size_t max_pages);
// Whether snapshot_pages surely says nullopt: a block cannot be walked, or
// the pages number more than `max_pages`, counted in 1,024 bits indexed by
// page number modulo 1,024 (pages 4 MiB apart share a bit). The count can
// only fall short, so "true" is sure; a chunk it lets through that does
// not fit is found out when its snapshot is taken. BlockTrace asks it of
// every chunk it encodes untried (its code not read: packs were waiting)
// to keep it out of the backlog: the exact sorted set of snapshot_pages
// was a fifth of the packing worker's time recording Lua, when the worker
// asked it.
// Only every `every`-th block is looked at (the first among them): the
// pages of some blocks are among the pages of all, so "true" stays sure.
// Every block, the walk was a tenth of the tracer's thread recording Lua
// (whose chunks mostly fit, so that it went through them all).
bool exceeds_snapshot_pages(uint64_t previous_to, const std::vector<Branch>& branches, std::size_t max_pages,
                            std::size_t every = 1);
// The same for branches stored with their stacks.
bool exceeds_snapshot_pages(uint64_t previous_to, std::span<const StackedBranch> branches, std::size_t max_pages,
                            std::size_t every = 1);

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
  static constexpr uint64_t kPageSize = 4096;

 private:
  std::map<uint64_t, std::vector<uint8_t>> pages_;  // page address -> its readable bytes
};

// A sealed chunk's branches as they are, shared by the trace (which reads
// them until the packed form comes) and its job.
struct RawChunk {
  std::vector<Branch> branches;
  std::vector<StackSnapshot> stacks;  // one a branch, or none when the trace keeps none
};

// `raw` in the explicit format (decoder/branch_chunk.h), its first block
// beginning at `previous_to`; its stacks only `with_stacks` (then one a
// branch). Whoever encodes a chunk (the trace or a packing worker) writes
// the same bytes.
std::vector<uint8_t> encode_explicit(const RawChunk& raw, uint64_t previous_to, bool with_stacks);
// The same for branches stored with their stacks (a tracer's log).
std::vector<uint8_t> encode_explicit(std::span<const StackedBranch> run, uint64_t previous_to, bool with_stacks);

// Branches as a tracer's log holds them, lent to a trace
// (BlockTrace::append_stacked with a lender) to be encoded explicitly in
// chunks of `chunk` branches straight from there, each chunk by whoever
// claims it first: the packer's worker, from the first on, or the trace,
// which takes what is left when it needs the memory back.
struct LentRun {
  std::span<const StackedBranch> run;
  uint64_t previous_to = 0;  // where the first chunk's first block begins
  std::size_t chunk = 0;
  bool with_stacks = false;
  std::shared_ptr<const void> owner;  // keeps `run` mapped while it is read
  std::vector<std::vector<uint8_t>> bytes;  // a chunk's, written by its claimer
  std::atomic<std::size_t> next{0};  // the next chunk to claim
  std::atomic<std::size_t> done{0};  // chunks encoded (their bytes set)
  std::size_t chunks() const { return bytes.size(); }
};
// Claims chunks of `lent` and encodes them until none is left.
void encode_lent(LentRun& lent);

struct PackJob {
  uint64_t first_sequence = 0;
  uint64_t previous_to = 0;
  std::shared_ptr<const RawChunk> raw;
  bool with_stacks = false;
  // The job's own, read by whoever runs it: it tries a PT segment. Null:
  // it encodes the chunk explicitly, no more.
  std::shared_ptr<CodeSnapshot> code;
  // With code, and no segment kept: encode it explicitly (false: the
  // chunk is explicit already, handed again to be packed).
  bool encode_unpacked = true;
  // No raw chunk: a tracer's log to encode where it lies (LentRun).
  std::shared_ptr<LentRun> lent{};
};

struct PackResult {
  uint64_t first_sequence = 0;
  uint32_t count = 0;
  // The chunk's bytes (packets, then the stack stream), or nullopt.
  std::optional<PackedPtSegment> segment;
  uint32_t packet_bytes = 0;
  // No segment: the chunk in the explicit format; nullopt when the job
  // never ran (the trace then encodes it).
  std::optional<std::vector<uint8_t>> explicit_bytes;
};

// Packs `job` (over its snapshot) as BlockTrace would in place, or
// encodes it explicitly.
PackResult run_pack_job(const PackJob& job, SegmentPacker& packer);
// What a job that never ran gives back (a packer going away).
PackResult unrun_pack_job(const PackJob& job);

// One trace's finished jobs: put by the packer, taken by the trace.
class PackInbox {
 public:
  void expect_one();  // a job was submitted for this inbox
  void put(PackResult result);
  // The results put since the last take, into `out` (cleared first).
  // The two vectors trade places: neither thread frees memory the other
  // allocated (a free into another thread's malloc arena waits for its
  // lock, which the packer holds while it faults fresh pages in).
  void take(std::vector<PackResult>& out);
  std::size_t pending() const;  // submitted, not put yet
  bool has_results() const { return has_done_.load(std::memory_order_acquire); }  // put, not taken yet
  void wait_idle();  // until every submitted job was put

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
