#pragma once
// One thread's branch trace: the taken branches (from, to) in the order they
// happened, bounded like a BTS buffer. Capacity is counted in 24-byte BTS
// records so that gdb's `set record btrace bts buffer-size` means the same
// here as on hardware. It is a bound, not an allocation: the store grows as
// branches come, and costs a few bytes per branch (decoder/branch_chunk.h):
// the newest branches are kept as plain structs until kChunkBranches of them
// (more while a hardware PT segment in progress holds them: hold_open)
// are packed into one chunk of bytes: an Intel PT segment (decoder/pt_chunk.h)
// when the trace has a code reader and the segment gives the branches back
// exactly, the explicit format of decoder/branch_chunk.h otherwise. Whatever the capacity, a thread's
// store never holds more than kMemoryCap bytes: beyond it the oldest chunk
// goes (or, under the stop policy, the trace is full). A chunk being
// encoded elsewhere (lent, below) counts as kMaxBytesPerBranch a branch
// until its bytes come, so that they never take the store past the cap,
// and room() judged before they come still holds after.
//
// Sequence numbers: every appended branch gets the next number (0, 1, ...);
// readers remember the number they have seen up to, which is what qXfer
// btrace `new`/`delta` reads and replay cursors need. Dropping old branches
// never renumbers the rest. Dropping is exact, one branch at a time as in a
// BTS ring; a chunk's bytes are freed once all its branches are dropped.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "decoder/branch.h"
#include "decoder/chunk_packer.h"
#include "decoder/code_reader.h"

namespace decoder {

class PtChunkCodec;

enum class OverflowPolicy {
  DropOldest,  // ring: the newest branches win (BTS default)
  Stop,        // refuse to append; the tracer stops the program and reports it
};

class BlockTrace {
 public:
  static constexpr std::size_t kBtsRecordSize = 24;
  // Each explicit chunk begins with an empty predictor (branch_chunk.h):
  // every block a chunk runs through costs its first branch whole. At
  // 1,024 that was a quarter of a Lua recording's store (1.57 bytes a
  // branch, 1.20 at 4,096), and the store's fresh pages are a large part
  // of what recording costs. A read decodes its chunk whole: 40-80 µs
  // (chunk_codec_bench); the last two decoded are kept.
  static constexpr std::size_t kChunkBranches = 4096;
  static constexpr std::size_t kMemoryCap = std::size_t{1} << 30;  // bytes per thread
  // The most one branch can add to memory_bytes() (as a plain struct pair).
  static constexpr std::size_t kMaxBytesPerBranch = sizeof(Branch) + sizeof(StackSnapshot);

  // `origin`: where the thread was when tracing began (the first block's begin).
  // `memory_cap`: kMemoryCap but in tests.
  BlockTrace(uint64_t origin, std::size_t capacity_records,
             OverflowPolicy policy = OverflowPolicy::DropOldest, std::size_t memory_cap = kMemoryCap);

  // Appends one taken branch. False (and nothing stored) only when the
  // buffer is full under OverflowPolicy::Stop.
  bool append(uint64_t from, uint64_t to);
  // The same, with the registers at `from`. A trace holds snapshots for all
  // of its branches or for none: mixing the two forms is a caller bug.
  bool append(uint64_t from, uint64_t to, const StackSnapshot& at_from);
  // The same for a run of branches, in order, as one append each would
  // store them, with one room check for as many as fit without a seal or
  // a drop, and a chunk sealed straight from the run where one by one
  // would fill the open structs and seal them at its next branch (the
  // translating tracer drains 100,000 at a time: a call and the checks
  // per branch were a third of btstub's time recording).
  // Returns how many were appended: fewer only when the buffer is full
  // under OverflowPolicy::Stop.
  // With a `lender` (and a packer), the trace may borrow the run's memory:
  // its whole chunks go to the packer as one job (decoder::LentRun), to be
  // encoded straight from the run, and are read from there until then;
  // `lender` is kept meanwhile. The caller leaves those bytes as they are
  // until return_borrowed(). (The translating tracer's log: encoded on
  // the packer's core while the program fills its other log.)
  std::size_t append_stacked(std::span<const StackedBranch> branches, std::shared_ptr<const void> lender = nullptr);
  // Until every chunk encoded from borrowed memory is encoded, and in: the
  // runs are the lender's again. What the packer has not begun yet is
  // encoded here.
  // With a `lender`: the runs lent with it (append_stacked's) alone.
  void return_borrowed(const void* lender = nullptr);
  // Runs borrowed and not returned yet (for tests).
  std::size_t borrowed_runs() const { return borrowed_.size(); }
  bool has_stacks() const { return with_stacks_; }
  // Appends the branches of one Intel PT segment a CPU wrote (PSB+ first),
  // keeping `packets` unchanged as one chunk when they decode, over the
  // code reader, to exactly `branches` from where the trace is now; else
  // appends the branches one by one (stored as the software tracer's
  // are). `stacks`: the snapshots, one a branch, when the trace has them.
  // `handed_out`: the first so many of `branches` were appended before,
  // while the segment was open (a reader may hold their sequence numbers).
  // The segment replaces them, keeping their numbers and snapshots, only
  // when they are still the trace's newest branches, unsealed (see
  // hold_open) and equal to those; else only the rest is appended, one
  // by one. False only when full under OverflowPolicy::Stop (then some of
  // the branches may have been appended).
  bool append_pt_segment(std::span<const uint8_t> packets, const std::vector<Branch>& branches,
                         const std::vector<StackSnapshot>* stacks = nullptr, std::size_t handed_out = 0);
  // Branches numbered `from_seq` and after stay plain structs rather than
  // being sealed every kChunkBranches: a PT segment still open holds them,
  // and append_pt_segment can replace them by the segment when it
  // completes. At most kMaxHeldBranches are held (a segment that never
  // completes): beyond, the hold ends and they are sealed as any others.
  // nullopt: no hold.
  void hold_open(std::optional<uint64_t> from_seq) { hold_ = from_seq; }
  static constexpr std::size_t kMaxHeldBranches = std::size_t{1} << 16;
  // The thread's code, read as it is now: chunks sealed from then on are
  // stored as PT segments where they can be. Reading a PT chunk walks the
  // code again; if it changed under the chunk, its branches read as gaps
  // (from kGapAddress). Null: the explicit format only.
  // `pack_code`: what packing reads instead (PtChunkCodec).
  void set_code(std::shared_ptr<CodeReader> code, std::shared_ptr<CodeReader> pack_code = nullptr);
  // Packing off the caller's path (decoder/chunk_packer.h): chunks sealed
  // from now on stay in the explicit format until `packer` has packed
  // them and collect_packed() puts the segments in. Null: packed where
  // sealed (as without a packer).
  void set_packer(std::shared_ptr<ChunkPacker> packer);
  // Puts in the segments the packer finished (sealing does too); cheap
  // when there are none.
  void collect_packed();
  // Waits until the packer finished every chunk handed to it, then
  // collects (tests and benchmarks).
  void wait_packed();
  // Waits until the packer finished the chunks and runs handed to it so
  // far, then collects them (not the backlog's later ones, which are
  // encoded already): what the trace holds is then what it keeps, not the
  // raw branches of a log drained at the last stop (`monitor record
  // status`; a few milliseconds at most).
  void settle();
  // While fewer than this many chunks wait to be packed, a chunk whose
  // code fits a snapshot goes with it, to be packed as a PT segment. Else
  // the tracer encodes it explicitly (reading its code pages costs the
  // tracer more than the encoding it saves), and it goes to be packed
  // later, once fewer wait (collect_packed), unless its code surely does
  // not fit: the tracer never packs in place while a packer is behind, as
  // the program waits for the tracer.
  static constexpr std::size_t kMaxPendingPacks = 8;
  // At most this many explicit chunks wait to be handed over; beyond, the
  // oldest of them stay explicit.
  static constexpr std::size_t kMaxBacklog = 1 << 16;
  // At most this many pages of code go with one chunk to the packer.
  static constexpr std::size_t kMaxPackPages = 32;
  // A sealed PT chunk's packets as stored (a segment starting with PSB+;
  // its last branch's packets end it), for a pt document to pass through.
  struct StoredSegment {
    uint64_t first_sequence = 0;  // its branches: [first_sequence, first_sequence + count)
    std::size_t count = 0;
    std::span<const uint8_t> packets;
  };
  // The PT chunks whose branches are all at or after `from_seq`, oldest
  // first, whose code is unchanged now (each is walked to know: packets
  // over changed code would decode to other branches).
  // Valid until the trace changes.
  std::vector<StoredSegment> stored_segments(uint64_t from_seq) const;
  // The same one chunk at a time, for a reader that walks a long trace in
  // pieces: the PT chunk that begins at branch `seq`, if its code is
  // unchanged (walked to know) and none of its branches was dropped.
  std::optional<StoredSegment> stored_segment_at(uint64_t seq) const;
  // Where the chunk after the one holding branch `seq` begins (the open
  // branches count as one): end_sequence() when there is none.
  uint64_t next_chunk_start(uint64_t seq) const;
  // Sealed chunks in each format (for tests and `monitor record status`).
  std::size_t pt_chunks() const { return pt_chunks_; }
  std::size_t explicit_chunks() const { return chunks_.size() - pt_chunks_; }  // raw ones too
  // Chunks with the packer, their branches held as they are (Chunk::raw).
  std::size_t raw_chunks() const;
  // Explicit chunks waiting to be handed again to be packed.
  std::size_t backlog_chunks() const { return backlog_.size(); }
  // Chunks the backlog decoded to hand them over again (for tests).
  uint64_t backlog_decoded() const { return backlog_decoded_; }
  // Branches after the last chunk, not sealed yet: append_stacked makes a
  // chunk straight from a run that reaches one branch past the chunk these
  // begin.
  std::size_t open_branches() const { return open_.size(); }
  // Tells traces apart for the lifetime of the process (a new trace may
  // live at a dead one's address; its sequence numbers start again).
  uint64_t id() const { return id_; }
  // Precondition: has_stacks() and first_sequence() <= seq < end_sequence().
  StackSnapshot stack_at(uint64_t seq) const;

  std::size_t size() const { return static_cast<std::size_t>(next_sequence_ - first_sequence_); }
  std::size_t capacity() const { return capacity_; }
  bool full() const { return !has_room(1); }
  // Whether `branches` more fit without dropping any.
  bool has_room(std::size_t branches) const;
  // How many more branches surely fit without dropping any, by the
  // capacity and by the memory cap: appended in any runs, with lent
  // chunks coming back between them, all are stored (under the stop
  // policy, the translating tracer's log holds no more: a branch the
  // program logged that the trace then refused would leave the thread
  // past the end of its history).
  std::size_t room() const;
  // The bytes counted against the memory cap (for tests).
  std::size_t capped_bytes() const { return chunk_bytes_; }
  OverflowPolicy policy() const { return policy_; }
  // What the store holds now, in bytes (chunks, the open structs, caches).
  std::size_t memory_bytes() const;

  // Sequence numbers of the oldest retained branch and one past the newest.
  uint64_t first_sequence() const { return first_sequence_; }
  uint64_t end_sequence() const { return next_sequence_; }
  // True when branches numbered >= `seq` were dropped before a reader saw them.
  bool lost_since(uint64_t seq) const { return seq < first_sequence(); }
  // Precondition: first_sequence() <= seq < end_sequence().
  Branch at(uint64_t seq) const;

  // Where the oldest retained block begins: the target of the newest dropped
  // branch, or the origin when nothing was dropped.
  uint64_t oldest_begin() const;
  // Where the block that the next branch appended ends begins.
  uint64_t open_block_begin() const { return size() == 0 ? oldest_begin() : at(next_sequence_ - 1).to; }

  // The layout_hash (decoder/block_cache.h) of block `seq` as it ran,
  // noted by the tracer where its code may change later (a JIT's): replay
  // takes the block for a gap where today's code decodes to another
  // layout (instructions moved, another kind or stack effect), rather than
  // replaying today's instructions for it. Noted in ascending `seq`.
  void note_block_code(uint64_t seq, uint64_t hash);
  std::optional<uint64_t> block_code(uint64_t seq) const;

  // Blocks for branches [from_seq, end_sequence()), oldest first; the last
  // block ends at `current_pc`. The first block begins at the target of
  // branch from_seq-1 (or oldest_begin() when from_seq is the first retained).
  // Precondition: first_sequence() <= from_seq <= end_sequence().
  std::vector<Block> blocks(uint64_t from_seq, uint64_t current_pc) const;

  // A signal delivered to the thread at the instruction at `pc` of block
  // `sequence` (about to run it; the last instruction of the block when
  // the signal sent the thread to a handler): replay reports the signal
  // when it arrives there, in either direction, as gdb's record full does.
  // Kept while the block is part of the history.
  void mark_signal(uint64_t sequence, uint64_t pc, int signal);
  // The signal delivered at that point, or 0.
  int signal_at(uint64_t sequence, uint64_t pc) const;
  // Whether a signal was delivered somewhere in block `sequence`.
  bool signal_in(uint64_t sequence) const;

  // Drops everything; tracing goes on from `origin`.
  void clear(uint64_t origin);
  // New capacity; keeps the newest branches that fit.
  void resize(std::size_t capacity_records);

 private:
  // `count` branches (kChunkBranches from the software tracer; a CPU's PT
  // segment whole; fewer when the open structs are sealed early), packed; `previous_to` is where its first block
  // begins (the target of the branch before it, or the origin).
  // A PT chunk's bytes are the segment's packets, then its snapshots
  // (decoder/branch_chunk.h encode_stack_stream) when the trace has them.
  struct Chunk {
    uint64_t first_sequence = 0;
    uint64_t previous_to = 0;
    std::vector<uint8_t> bytes;
    uint64_t code_hash = 0;     // PT: of the code its walk read
    uint32_t count = 0;
    uint32_t packet_bytes = 0;  // PT: where the snapshots begin
    bool pt = false;
    // Lent (append_stacked with a lender): `bytes` empty until put_borrowed.
    bool lent = false;
    // Handed to the packer: the branches as they are (and `bytes` empty),
    // shared with the job, until its packed or explicit form replaces
    // them, or the trace encodes them when none comes.
    // (One pointer: every chunk pays for the field, and a loop's whole
    // chunk is about 300 bytes.)
    std::shared_ptr<const RawChunk> raw{};
  };
  // A chunk unpacked for reading; reads come in runs (a cursor walking
  // back, a document being built), so a couple of these serve them all.
  struct Unpacked {
    uint64_t first_sequence = UINT64_MAX;
    std::vector<Branch> branches;
    std::vector<StackSnapshot> stacks;
  };

  // Each batch of whole chunks in a row is one job for the packer.
  struct Borrowed {
    std::shared_ptr<LentRun> lent;
  };
  // The batch append_stacked is gathering, lent when it ends.
  struct Batch {
    uint64_t first_sequence = 0;
    uint64_t previous_to = 0;
    const StackedBranch* begin = nullptr;
    std::size_t chunks = 0;
  };

  bool make_room();
  void drop_oldest();
  void drop_through(uint64_t sequence);  // drops every branch numbered < sequence
  // Packs the oldest `count` open structs into a chunk.
  void seal_open_chunk(std::size_t count);
  void seal_open_chunk() { seal_open_chunk(open_.size()); }
  // Makes `raw` the chunk of the branches just before the open structs
  // (next_sequence_ counts them already) and hands it to the packer.
  void seal_raw(std::shared_ptr<RawChunk> raw);
  // Whether a chunk sealed now would be encoded here, its code unread
  // (no codec, or packs waiting): then seal_stacked may take it.
  bool seals_untried();
  // The explicit chunk starting at `first_sequence`, to be packed later
  // (the oldest queued goes past kMaxBacklog).
  void queue_in_backlog(uint64_t first_sequence);
  // Makes `run` the chunk just before the (empty) open structs, encoded
  // from the run itself: seal_raw's chunk when seals_untried().
  void seal_stacked(std::span<const StackedBranch> run);
  // Hands the batch gathered to the packer (borrowed_ holds it meanwhile).
  void lend_batch();
  // Gives a borrowed batch's chunks (those not dropped) their bytes; every
  // chunk of `lent` is encoded.
  void put_borrowed(uint64_t first_sequence, LentRun& lent);
  // Until every chunk of `lent` is encoded, the ones nobody claimed yet here.
  static void settle_lent(LentRun& lent);
  // Room for `branches` more, dropping the oldest at once under DropOldest
  // as that many appends would one by one; false where they would not.
  bool make_room_for_run(std::size_t branches, bool keep_open);
  // Sealing when the open structs reach kChunkBranches, short of a hold.
  void seal_for_room();
  // Whether the trace's newest `count` branches are open structs equal to
  // the first `count` of `branches`.
  bool newest_open_are(const std::vector<Branch>& branches, std::size_t count) const;
  // What became of a chunk offered to the packer.
  enum class Handing { Packing, EncodeHere, EncodeHereUntried, Refused };
  // Hands `raw` to the packer as chunk `chunk` to be packed (and, not kept
  // as a segment, encoded there when `or_encode`) while fewer than
  // kMaxPendingPacks jobs wait and its code fits a snapshot. Else, when
  // `or_encode`, the caller encodes it: EncodeHere when its code did not
  // fit (it never will: the backlog need not decode it again to find that
  // out), EncodeHereUntried when the packs waiting kept it from being
  // tried. Refused: no packer (packed here, if at all), or not to be
  // packed and not `or_encode`.
  Handing hand_to_packer(const Chunk& chunk, std::shared_ptr<const RawChunk> raw, bool or_encode);
  // Hands explicit chunks not packed yet, newest first, while fewer than
  // kMaxPendingPacks jobs with code wait.
  void feed_backlog();
  // The index of the chunk whose first branch is `seq`, if one is held.
  std::optional<std::size_t> chunk_starting_at(uint64_t seq) const;
  void put_packed(std::size_t index, PackResult& packed);
  void put_explicit(std::size_t index, PackResult& packed);  // encoded by the packer
  // A raw chunk (Chunk::raw) in the explicit format: its packed form is
  // not coming, or not kept.
  void make_explicit(Chunk& chunk);
  static std::size_t raw_bytes(const Chunk& chunk);
  // What a lent chunk counts until its bytes come: no less than its bytes
  // (the explicit format takes a few bytes a branch, more than 32 only
  // where most of its branches are gaps or jumps gigabytes long), so that
  // their coming takes no room away.
  static std::size_t lent_bytes(const Chunk& chunk) { return chunk.lent ? chunk.count * kMaxBytesPerBranch : 0; }
  // A raw chunk to fill: a spare one (its room kept) or a new one.
  std::shared_ptr<RawChunk> fresh_raw();
  // Lets go of `raw`, kept as a spare when nobody else holds it.
  void recycle(std::shared_ptr<const RawChunk>& raw);
  bool append_branch(const Branch& branch, const StackSnapshot& stack);
  const Unpacked& unpacked(uint64_t seq) const;  // the packed chunk holding `seq`, unpacked
  void unpack(std::size_t index, Unpacked& u) const;
  // Where chunk `index`'s last branch went: the next one's first block begins there.
  uint64_t chunk_end_to(std::size_t index) const;
  uint64_t open_first_sequence() const { return next_sequence_ - open_.size(); }
  void forget_unpacked() const;

  std::deque<Chunk> chunks_;            // oldest first, contiguous; may hold dropped branches
  // The sum of chunks_' bytes, raw ones' structs included, lent ones'
  // kMaxBytesPerBranch a branch (lent_bytes).
  std::size_t chunk_bytes_ = 0;
  std::size_t pt_chunks_ = 0;           // chunks_ in PT packets
  std::shared_ptr<PtChunkCodec> codec_;  // null: no code reader
  std::shared_ptr<ChunkPacker> packer_;  // null: chunks are packed where sealed
  std::shared_ptr<PackInbox> inbox_;     // the packer's results for this trace
  std::vector<PackResult> collected_;   // inbox_'s last results: their room trades places with the inbox's
  std::deque<uint64_t> backlog_;         // first sequences of chunks left explicit while the packer was busy
  // Chunks being encoded from borrowed memory (append_stacked with a
  // lender; their bytes empty meanwhile, their branches read there), by
  // their batch's first sequence.
  std::map<uint64_t, Borrowed> borrowed_;
  std::shared_ptr<const void> lender_;     // during append_stacked
  Batch batch_;  // being gathered, lent when append_stacked ends
  uint64_t backlog_decoded_ = 0;
  // Raw chunks whose form came back, refilled: fresh ones had their pages
  // faulted in again and again (a tenth of btstub's thread while it
  // stored a translated log). A few: 32 KiB each, per traced thread.
  std::vector<std::shared_ptr<RawChunk>> spare_raws_;
  static constexpr std::size_t kMaxSpareRaws = 4;
  std::vector<Branch> open_;            // the newest branches, after the last chunk
  std::vector<StackSnapshot> open_stacks_;  // parallel to open_, or empty
  mutable Unpacked unpacked_[2];
  mutable std::size_t last_unpacked_ = 0;
  std::size_t capacity_;
  std::size_t memory_cap_;
  uint64_t open_previous_to_ = 0;       // where open_'s first block begins
  uint64_t first_sequence_ = 0;         // the oldest retained branch
  uint64_t next_sequence_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> block_codes_;  // note_block_code's (seq, hash), ascending
  std::optional<uint64_t> hold_;        // hold_open()
  std::map<std::pair<uint64_t, uint64_t>, int> signals_;  // (sequence, pc) -> signal
  bool with_stacks_ = false;  // set by the first append after construction or clear()
  OverflowPolicy policy_;
  uint64_t id_;
};

// Capacity in records for a buffer of `bytes` (at least one record).
std::size_t bts_records_for_bytes(uint64_t bytes);

}  // namespace decoder
