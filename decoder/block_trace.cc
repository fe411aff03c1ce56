#include "decoder/block_trace.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <iterator>
#include <thread>
#include <utility>

#include "decoder/branch_chunk.h"
#include "decoder/chunk_packer.h"
#include "decoder/pt_chunk.h"

namespace decoder {
namespace {

// One member of each StackedBranch of a run, as a forward iterator, so
// that vector::insert writes each element once (std::views::transform
// would do, but clang 14 cannot compile libstdc++ 12's ranges).
template <auto Member>
struct MemberOf {
  using iterator_category = std::forward_iterator_tag;
  using value_type = std::remove_cvref_t<decltype(std::declval<const StackedBranch&>().*Member)>;
  using difference_type = std::ptrdiff_t;
  using pointer = const value_type*;
  using reference = const value_type&;
  const StackedBranch* at;
  reference operator*() const { return at->*Member; }
  pointer operator->() const { return &(at->*Member); }
  MemberOf& operator++() { ++at; return *this; }
  MemberOf operator++(int) { MemberOf before = *this; ++at; return before; }
  bool operator==(const MemberOf& other) const { return at == other.at; }
};

// Emptied open structs give back the room a hold can have grown them to,
// far past a chunk.
void give_back_grown_room(std::vector<Branch>& open, std::vector<StackSnapshot>& open_stacks, std::size_t chunk) {
  if (open.empty() && open.capacity() > 2 * chunk) {
    open.shrink_to_fit();
    open_stacks.shrink_to_fit();
  }
}

uint64_t next_trace_id = 1;  // BlockTrace::id(); one thread serves everything
}  // namespace

BlockTrace::BlockTrace(uint64_t origin, std::size_t capacity_records, OverflowPolicy policy, std::size_t memory_cap)
    : capacity_(std::max<std::size_t>(capacity_records, 1)), memory_cap_(memory_cap), open_previous_to_(origin),
      policy_(policy), id_(next_trace_id++) {}

bool BlockTrace::has_room(std::size_t branches) const {
  if (branches > capacity_ || size() > capacity_ - branches) return false;
  const std::size_t open_bytes = (open_.size() + branches) * kMaxBytesPerBranch;
  return chunk_bytes_ + open_bytes <= memory_cap_;
}

std::size_t BlockTrace::room() const {
  const std::size_t by_count = capacity_ - std::min(capacity_, size());
  // As has_room counts, less what sealing may add on the way: each chunk
  // sealed raw counts its RawChunk too (a byte a branch covers those of
  // whole chunks, one RawChunk more the one begun).
  const std::size_t used = chunk_bytes_ + open_.size() * kMaxBytesPerBranch + sizeof(RawChunk);
  const std::size_t by_memory = used >= memory_cap_ ? 0 : (memory_cap_ - used) / (kMaxBytesPerBranch + 1);
  return std::min(by_count, by_memory);
}

void BlockTrace::note_block_code(uint64_t seq, uint64_t hash) {
  while (!block_codes_.empty() && block_codes_.front().first < first_sequence_) block_codes_.pop_front();
  if (!block_codes_.empty() && block_codes_.back().first >= seq) return;  // out of order: a caller bug
  block_codes_.emplace_back(seq, hash);
}

std::optional<uint64_t> BlockTrace::block_code(uint64_t seq) const {
  if (block_codes_.empty() || seq < first_sequence_) return std::nullopt;
  auto it = std::lower_bound(block_codes_.begin(), block_codes_.end(), std::pair<uint64_t, uint64_t>{seq, 0});
  if (it == block_codes_.end() || it->first != seq) return std::nullopt;
  return it->second;
}

std::size_t BlockTrace::memory_bytes() const {
  std::size_t bytes = chunk_bytes_ + chunks_.size() * sizeof(Chunk) +
                      block_codes_.size() * sizeof(decltype(block_codes_)::value_type);
  bytes += open_.capacity() * sizeof(Branch) + open_stacks_.capacity() * sizeof(StackSnapshot);
  for (const Unpacked& u : unpacked_) {
    bytes += u.branches.capacity() * sizeof(Branch) + u.stacks.capacity() * sizeof(StackSnapshot);
  }
  return bytes;
}

void BlockTrace::set_code(std::shared_ptr<CodeReader> code, std::shared_ptr<CodeReader> pack_code) {
  codec_ = code ? std::make_shared<PtChunkCodec>(std::move(code), std::move(pack_code)) : nullptr;
  forget_unpacked();  // PT chunks read through the new reader from now on
}

void BlockTrace::forget_unpacked() const {
  for (Unpacked& u : unpacked_) u = Unpacked{};
}

// Drops every branch numbered below `sequence`: packed chunks go once all
// their branches are dropped; the open structs go one by one.
void BlockTrace::drop_through(uint64_t sequence) {
  sequence = std::min(sequence, next_sequence_);
  if (sequence <= first_sequence_) return;
  first_sequence_ = sequence;
  bool freed = false;
  while (!chunks_.empty() && chunks_.front().first_sequence + chunks_.front().count <= first_sequence_) {
    chunk_bytes_ -= chunks_.front().bytes.size() + raw_bytes(chunks_.front()) + lent_bytes(chunks_.front());
    if (chunks_.front().pt) --pt_chunks_;
    chunks_.pop_front();
    freed = true;
  }
  if (chunks_.empty() && first_sequence_ > open_first_sequence()) {
    const std::size_t n = static_cast<std::size_t>(first_sequence_ - open_first_sequence());
    open_previous_to_ = open_[n - 1].to;
    open_.erase(open_.begin(), open_.begin() + static_cast<std::ptrdiff_t>(n));
    if (with_stacks_) open_stacks_.erase(open_stacks_.begin(), open_stacks_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (freed) forget_unpacked();
}

void BlockTrace::drop_oldest() { drop_through(first_sequence_ + 1); }

// Room for one more branch: under DropOldest the oldest go (one branch for
// the capacity, a whole chunk for the memory cap); false when full under Stop.
bool BlockTrace::make_room() {
  if (has_room(1)) return true;
  if (policy_ == OverflowPolicy::Stop) return false;
  if (size() >= capacity_) drop_oldest();
  while (!has_room(1) && !chunks_.empty()) drop_through(chunks_.front().first_sequence + chunks_.front().count);
  return true;
}

std::optional<std::size_t> BlockTrace::chunk_starting_at(uint64_t seq) const {
  auto it = std::lower_bound(chunks_.begin(), chunks_.end(), seq,
                             [](const Chunk& c, uint64_t s) { return c.first_sequence < s; });
  if (it == chunks_.end() || it->first_sequence != seq) return std::nullopt;
  return static_cast<std::size_t>(it - chunks_.begin());
}

void BlockTrace::set_packer(std::shared_ptr<ChunkPacker> packer) {
  return_borrowed();  // their results come to the old inbox
  // The results for raw chunks would go to the old inbox: none comes now.
  for (Chunk& chunk : chunks_) {
    if (chunk.raw) make_explicit(chunk);
  }
  packer_ = std::move(packer);
  inbox_ = packer_ ? std::make_shared<PackInbox>() : nullptr;
  backlog_.clear();
}

BlockTrace::Handing BlockTrace::hand_to_packer(const Chunk& chunk, std::shared_ptr<const RawChunk> raw,
                                               bool or_encode) {
  if (!packer_ || !codec_) return Handing::Refused;
  // Code the snapshot cannot take (too many pages, a gap) is not packed:
  // packing it here would cost the tracer a libipt walk.
  std::shared_ptr<CodeSnapshot> code;
  // Not while borrowing: the packer's core encodes the borrowed chunks.
  const bool tried = !lender_ && inbox_->pending() < kMaxPendingPacks;
  if (tried) code = CodeSnapshot::take(codec_->code(), chunk.previous_to, raw->branches, kMaxPackPages);
  if (!code) {
    if (!or_encode) return Handing::Refused;
    // Encoded here, where the branches are still in this core's cache: a
    // raw chunk (32 bytes a branch) handed to the packer's core only to be
    // encoded cost that core some three times the encoding, and the
    // tracer's own thread more to hand over than to encode (Lua: a
    // recording's CPU 0.57, its time 0.92 of what it was).
    return tried ? Handing::EncodeHere : Handing::EncodeHereUntried;
  }
  inbox_->expect_one();
  packer_->submit(inbox_, PackJob{chunk.first_sequence, chunk.previous_to, std::move(raw), with_stacks_,
                                  std::move(code), or_encode});
  return Handing::Packing;
}

// The chunk's code is read now, not when it was sealed: if it changed
// since, the packer's check (the packets must decode to exactly the
// branches) keeps the chunk explicit, and a chunk packed over bytes that
// still give the same branches holds their hash, as one packed then would.
void BlockTrace::feed_backlog() {
  // Newest first.
  std::size_t i = backlog_.size();
  while (i > 0) {
    // Asked before decoding: a chunk decoded for a busy packer was thrown
    // away, at every seal and stop (a tenth of btstub's CPU while recording).
    if (inbox_->pending() >= kMaxPendingPacks) return;
    --i;
    const auto at = backlog_.begin() + static_cast<std::ptrdiff_t>(i);
    const std::optional<std::size_t> index = chunk_starting_at(*at);
    if (!index || chunks_[*index].pt) {  // dropped, or packed meanwhile
      backlog_.erase(at);
      continue;
    }
    const Chunk& chunk = chunks_[*index];  // explicit: seal_raw queues no other
    std::shared_ptr<RawChunk> decoded = fresh_raw();
    ++backlog_decoded_;
    if (!decode_branch_chunk(chunk.bytes, chunk.previous_to, with_stacks_, chunk.count, decoded->branches,
                             decoded->stacks)) {
      backlog_.erase(at);
      continue;
    }
    std::shared_ptr<const RawChunk> raw = std::move(decoded);
    (void)hand_to_packer(chunk, raw, false);
    recycle(raw);  // a spare again unless the job holds it
    backlog_.erase(at);  // handed, or refused: it stays explicit
  }
}

void BlockTrace::collect_packed() {
  if (!inbox_) return;
  inbox_->take(collected_);
  for (PackResult& packed : collected_) {
    if (const auto borrowed = borrowed_.find(packed.first_sequence); borrowed != borrowed_.end()) {
      // The worker claimed the last chunk and encoded its own (or never
      // ran the job, as its packer went away: the rest is encoded here).
      settle_lent(*borrowed->second.lent);
      put_borrowed(borrowed->first, *borrowed->second.lent);
      borrowed_.erase(borrowed);
      continue;
    }
    // The chunk, unless its branches were dropped since.
    const std::optional<std::size_t> index = chunk_starting_at(packed.first_sequence);
    if (!index) continue;
    if (packed.segment) put_packed(*index, packed);
    if (packed.explicit_bytes) put_explicit(*index, packed);
    if (chunks_[*index].raw) make_explicit(chunks_[*index]);  // not packed, or not kept
  }
  if (!backlog_.empty()) feed_backlog();
}

std::size_t BlockTrace::raw_chunks() const {
  return static_cast<std::size_t>(
      std::count_if(chunks_.begin(), chunks_.end(), [](const Chunk& c) { return c.raw != nullptr; }));
}

std::size_t BlockTrace::raw_bytes(const Chunk& chunk) {
  if (!chunk.raw) return 0;
  return sizeof(RawChunk) + chunk.raw->branches.size() * sizeof(Branch) +
         chunk.raw->stacks.size() * sizeof(StackSnapshot);
}

std::shared_ptr<RawChunk> BlockTrace::fresh_raw() {
  if (spare_raws_.empty()) return std::make_shared<RawChunk>();
  std::shared_ptr<RawChunk> raw = std::move(spare_raws_.back());
  spare_raws_.pop_back();
  return raw;
}

void BlockTrace::recycle(std::shared_ptr<const RawChunk>& raw) {
  // Alone: a job that held it is done with it (the packer lets go before
  // it puts the result). The fence orders the packer's reads, before its
  // release of the count this load saw, before the writes that refill it
  // (a chunk given up while its job ran, BlockTrace::set_packer).
  // Not one a hold made longer than a chunk: its room would be kept, and
  // counted as a chunk's (raw_bytes counts what a raw chunk holds).
  if (raw && raw.use_count() == 1 && spare_raws_.size() < kMaxSpareRaws &&
      raw->branches.capacity() <= kChunkBranches && raw->stacks.capacity() <= kChunkBranches) {
    std::atomic_thread_fence(std::memory_order_acquire);
    std::shared_ptr<RawChunk> spare = std::const_pointer_cast<RawChunk>(std::move(raw));
    spare->branches.clear();
    spare->stacks.clear();
    spare_raws_.push_back(std::move(spare));
  }
  raw.reset();
}

void BlockTrace::make_explicit(Chunk& chunk) {
  chunk_bytes_ -= raw_bytes(chunk);
  chunk.bytes = encode_explicit(*chunk.raw, chunk.previous_to, with_stacks_);
  chunk_bytes_ += chunk.bytes.size();
  recycle(chunk.raw);
}

void BlockTrace::put_borrowed(uint64_t first_sequence, LentRun& lent) {
  // Every chunk encoded, nobody reads the run any more: the lender's
  // memory goes now, not when the job is let go on the worker's thread
  // (btstub unmaps an ended program's log areas at once).
  lent.owner.reset();
  // The batch's chunks that were not dropped meanwhile: the newest, in a row.
  std::optional<std::size_t> index;
  for (std::size_t j = 0; j < lent.chunks(); ++j) {
    const uint64_t seq = first_sequence + j * kChunkBranches;
    if (!index) {
      if (chunks_.empty() || seq < chunks_.front().first_sequence) continue;
      index = chunk_starting_at(seq);
      if (!index) return;  // cleared: the chunks are not these
    }
    Chunk& chunk = chunks_[*index];
    ++*index;
    if (chunk.first_sequence != seq || !chunk.lent || chunk.pt || chunk.raw || !chunk.bytes.empty()) return;  // a bug
    chunk_bytes_ -= lent_bytes(chunk);
    chunk.lent = false;
    chunk.bytes = std::move(lent.bytes[j]);
    chunk_bytes_ += chunk.bytes.size();
  }
}

void BlockTrace::settle_lent(LentRun& lent) {
  // What the worker has not claimed yet is encoded here, rather than
  // waited for: then only the chunks it is encoding are waited for (at
  // most a chunk's time, some 20 µs).
  encode_lent(lent);
  while (lent.done.load(std::memory_order_acquire) < lent.chunks()) std::this_thread::yield();
}

void BlockTrace::return_borrowed(const void* lender) {
  for (auto it = borrowed_.begin(); it != borrowed_.end();) {
    if (lender != nullptr && it->second.lent->owner.get() != lender) {
      ++it;
      continue;
    }
    settle_lent(*it->second.lent);
    put_borrowed(it->first, *it->second.lent);
    it = borrowed_.erase(it);
  }
}

void BlockTrace::lend_batch() {
  if (batch_.chunks == 0) return;
  auto lent = std::make_shared<LentRun>();
  lent->run = std::span<const StackedBranch>(batch_.begin, batch_.chunks * kChunkBranches);
  lent->previous_to = batch_.previous_to;
  lent->chunk = kChunkBranches;
  lent->with_stacks = with_stacks_;
  lent->owner = lender_;
  lent->bytes.resize(batch_.chunks);
  borrowed_[batch_.first_sequence] = Borrowed{lent};
  PackJob job;
  job.first_sequence = batch_.first_sequence;
  job.lent = std::move(lent);
  inbox_->expect_one();
  packer_->submit(inbox_, std::move(job));
  batch_ = Batch{};
}

void BlockTrace::settle() {
  if (!inbox_) return;
  inbox_->wait_idle();
  collect_packed();
}

void BlockTrace::wait_packed() {
  if (!inbox_) return;
  // Collecting hands the backlog's next chunks; they may all be finished
  // before the loop looks again (nothing pending then, but results to take).
  do {
    settle();
  } while (inbox_->pending() != 0 || inbox_->has_results());
}

// The same branches as the explicit chunk `index` holds, as a PT segment
// (as sealing in place keeps them): reads give the same either way (the
// unpacked cache stays good). Not where it would pass the memory cap.
void BlockTrace::put_packed(std::size_t index, PackResult& packed) {
  Chunk& chunk = chunks_[index];
  if (chunk.pt || chunk.count != packed.count) return;
  const std::size_t held = chunk.bytes.size() + raw_bytes(chunk);
  if (chunk_bytes_ - held + packed.segment->bytes.size() > memory_cap_) return;
  chunk_bytes_ -= held;
  recycle(chunk.raw);
  chunk.bytes = std::move(packed.segment->bytes);
  chunk.code_hash = packed.segment->code_hash;
  chunk.packet_bytes = packed.packet_bytes;
  chunk.pt = true;
  chunk_bytes_ += chunk.bytes.size();
  ++pt_chunks_;
}

// The chunk still waiting for them (a chunk the backlog handed over again
// was explicit already).
void BlockTrace::put_explicit(std::size_t index, PackResult& packed) {
  Chunk& chunk = chunks_[index];
  if (!chunk.raw || chunk.count != packed.count) return;
  chunk_bytes_ -= raw_bytes(chunk);
  recycle(chunk.raw);
  chunk.bytes = std::move(*packed.explicit_bytes);
  chunk_bytes_ += chunk.bytes.size();
}

void BlockTrace::seal_open_chunk(std::size_t count) {
  if (count == 0) return;
  // The chunk's branches, copied out of the open structs: moving them
  // out would leave the tracer fresh memory to fill a chunk after chunk,
  // last touched by the packer on another core (recording took twice as
  // long); the copy is a few µs.
  std::shared_ptr<RawChunk> raw = fresh_raw();
  raw->branches.assign(open_.begin(), open_.begin() + static_cast<std::ptrdiff_t>(count));
  open_.erase(open_.begin(), open_.begin() + static_cast<std::ptrdiff_t>(count));
  if (with_stacks_) {
    raw->stacks.assign(open_stacks_.begin(), open_stacks_.begin() + static_cast<std::ptrdiff_t>(count));
    open_stacks_.erase(open_stacks_.begin(), open_stacks_.begin() + static_cast<std::ptrdiff_t>(count));
  }
  give_back_grown_room(open_, open_stacks_, kChunkBranches);
  seal_raw(std::move(raw));
}

void BlockTrace::seal_raw(std::shared_ptr<RawChunk> raw) {
  collect_packed();
  const std::size_t count = raw->branches.size();
  Chunk chunk{open_first_sequence() - count, open_previous_to_, {}};
  chunk.count = static_cast<uint32_t>(count);
  open_previous_to_ = raw->branches.back().to;
  const Handing handing = hand_to_packer(chunk, raw, true);
  std::optional<PackedPtSegment> segment;
  if (codec_ && handing == Handing::Refused) segment = codec_->pack(chunk.previous_to, raw->branches);
  // Not tried now: to be packed later, unless its code surely spans more
  // pages than a snapshot takes (most of an interpreter's chunks, which
  // the backlog decoded again only to find that out). Told from every
  // eighth block: a chunk that slips through is refused when the backlog
  // hands it (CodeSnapshot::take is exact).
  if (handing == Handing::EncodeHereUntried && !lender_ &&
      !exceeds_snapshot_pages(chunk.previous_to, raw->branches, kMaxPackPages, 8)) {
    queue_in_backlog(chunk.first_sequence);
  }
  if (segment) {
    chunk.pt = true;
    chunk.code_hash = segment->code_hash;
    chunk.packet_bytes = static_cast<uint32_t>(segment->bytes.size());
    chunk.bytes = std::move(segment->bytes);
    if (with_stacks_) {
      const std::vector<uint8_t> encoded = encode_stack_stream(raw->stacks);
      chunk.bytes.insert(chunk.bytes.end(), encoded.begin(), encoded.end());
      chunk.bytes.shrink_to_fit();
    }
    ++pt_chunks_;
  } else if (handing == Handing::Packing) {
    chunk.raw = std::move(raw);
  } else {
    chunk.bytes = encode_explicit(*raw, chunk.previous_to, with_stacks_);
  }
  chunk_bytes_ += chunk.bytes.size() + raw_bytes(chunk);
  chunks_.push_back(std::move(chunk));
  if (raw) {  // packed or encoded here: its arrays serve the next chunk
    std::shared_ptr<const RawChunk> spent = std::move(raw);
    recycle(spent);
  }
}

void BlockTrace::queue_in_backlog(uint64_t first_sequence) {
  backlog_.push_back(first_sequence);
  if (backlog_.size() > kMaxBacklog) backlog_.pop_front();
}

bool BlockTrace::seals_untried() {
  collect_packed();  // as seal_raw does first: it may free the packer
  return !codec_ || (packer_ && inbox_->pending() >= kMaxPendingPacks);
}

void BlockTrace::seal_stacked(std::span<const StackedBranch> run) {
  const std::size_t count = run.size();
  Chunk chunk{open_first_sequence() - count, open_previous_to_, {}};
  chunk.count = static_cast<uint32_t>(count);
  open_previous_to_ = run.back().branch.to;
  // As seal_raw queues a chunk it encodes untried.
  const bool borrow = lender_ && packer_;
  if (!borrow && codec_ && !exceeds_snapshot_pages(chunk.previous_to, run, kMaxPackPages, 8)) {
    queue_in_backlog(chunk.first_sequence);
  }
  if (borrow && count == kChunkBranches) {
    // Encoded on the packer's core, from the lender's memory, with the
    // chunks next to it in one job (lend_batch); read from there until
    // they come back (bytes empty meanwhile).
    if (batch_.chunks != 0 && (batch_.begin + batch_.chunks * kChunkBranches != run.data() ||
                               batch_.first_sequence + batch_.chunks * kChunkBranches != chunk.first_sequence)) {
      lend_batch();
    }
    if (batch_.chunks == 0) batch_ = Batch{chunk.first_sequence, chunk.previous_to, run.data(), 0};
    ++batch_.chunks;
    chunk.lent = true;
    chunk_bytes_ += lent_bytes(chunk);
    chunks_.push_back(std::move(chunk));
    return;
  }
  chunk.bytes = encode_explicit(run, chunk.previous_to, with_stacks_);
  chunk_bytes_ += chunk.bytes.size();
  chunks_.push_back(std::move(chunk));
}

// The open structs hold kChunkBranches: they are sealed, but for those a
// hold keeps (at most kMaxHeldBranches, so that memory stays bounded by a
// segment that never completes).
void BlockTrace::seal_for_room() {
  const uint64_t open_first = open_first_sequence();
  if (hold_ && *hold_ < open_first) hold_.reset();  // sealed or dropped meanwhile: nothing to keep
  if (!hold_ || *hold_ >= next_sequence_) {
    seal_open_chunk();
    return;
  }
  if (next_sequence_ - *hold_ >= kMaxHeldBranches) {
    hold_.reset();
    seal_open_chunk();
    return;
  }
  const std::size_t before = static_cast<std::size_t>(*hold_ - open_first);
  if (before >= kChunkBranches) seal_open_chunk(before);
}

bool BlockTrace::append_branch(const Branch& branch, const StackSnapshot& stack) {
  if (!make_room()) return false;
  // Sealing needs the open structs to start a chunk: only when every
  // retained branch before them is packed (always, unless the capacity is
  // below a chunk, when the open structs are the whole ring).
  if (open_.size() >= kChunkBranches) seal_for_room();
  open_.push_back(branch);
  if (with_stacks_) open_stacks_.push_back(stack);
  ++next_sequence_;
  return true;
}

bool BlockTrace::newest_open_are(const std::vector<Branch>& branches, std::size_t count) const {
  if (count > open_.size() || count > branches.size()) return false;
  return std::equal(open_.end() - static_cast<std::ptrdiff_t>(count), open_.end(), branches.begin());
}

bool BlockTrace::append_pt_segment(std::span<const uint8_t> packets, const std::vector<Branch>& branches,
                                   const std::vector<StackSnapshot>* stacks, std::size_t handed_out) {
  if (branches.empty()) return true;
  assert(size() == 0 || with_stacks_ == (stacks != nullptr));
  assert(!stacks || stacks->size() == branches.size());
  // The branches not in the trace yet, one by one.
  auto one_by_one = [&] {
    for (std::size_t i = std::min(handed_out, branches.size()); i < branches.size(); ++i) {
      const bool ok = stacks ? append(branches[i].from, branches[i].to, (*stacks)[i])
                             : append(branches[i].from, branches[i].to);
      if (!ok) return false;
    }
    return true;
  };
  // A segment longer than the buffer would be dropped in part at once:
  // the ring keeps the newest branches, one by one. Handed-out branches
  // that were sealed, dropped or are not the segment's stay as they are.
  if (!codec_ || branches.size() > capacity_ || branches.size() > UINT32_MAX ||
      !newest_open_are(branches, handed_out)) {
    return one_by_one();
  }
  // The first block begins where the branch before the segment went.
  const std::size_t before = open_.size() - handed_out;
  const uint64_t previous_to = before == 0 ? open_previous_to_ : open_[before - 1].to;
  std::optional<PackedPtSegment> adopted = codec_->adopt(previous_to, packets, branches);
  if (!adopted) return one_by_one();
  const std::size_t added = branches.size() - handed_out;
  const std::size_t stack_bytes = stacks ? branches.size() * sizeof(StackSnapshot) : 0;
  auto fits = [&] {
    // The handed-out structs give way to the chunk.
    const std::size_t open_bytes = (open_.size() - handed_out) * kMaxBytesPerBranch;
    return size() + added <= capacity_ &&
           chunk_bytes_ + adopted->bytes.size() + stack_bytes + open_bytes <= memory_cap_;
  };
  const uint64_t first = next_sequence_ - handed_out;  // the segment's first branch
  if (!fits()) {
    if (policy_ == OverflowPolicy::Stop) return handed_out == 0 ? false : one_by_one();
    if (size() + added > capacity_) {
      // Drops must not reach the handed-out branches the segment replaces.
      const uint64_t through = next_sequence_ + added - capacity_;
      if (through > first) return one_by_one();
      drop_through(through);
    }
    while (!fits() && !chunks_.empty()) drop_through(chunks_.front().first_sequence + chunks_.front().count);
    if (!fits()) return one_by_one();
  }
  if (stacks) with_stacks_ = true;
  std::vector<StackSnapshot> segment_stacks;
  if (stacks) {
    // The handed-out branches keep the snapshots taken when they came.
    segment_stacks.assign(open_stacks_.end() - static_cast<std::ptrdiff_t>(handed_out), open_stacks_.end());
    segment_stacks.insert(segment_stacks.end(), stacks->begin() + static_cast<std::ptrdiff_t>(handed_out),
                          stacks->end());
  }
  // The segment takes the handed-out branches' place; chunks are
  // contiguous: the open branches before them become a (shorter) chunk of
  // their own.
  open_.resize(open_.size() - handed_out);
  if (with_stacks_) open_stacks_.resize(open_.size());
  next_sequence_ = first;  // the open structs end there now
  seal_open_chunk();
  hold_.reset();
  Chunk chunk{first, open_previous_to_, std::move(adopted->bytes)};
  chunk.count = static_cast<uint32_t>(branches.size());
  chunk.pt = true;
  chunk.code_hash = adopted->code_hash;
  chunk.packet_bytes = static_cast<uint32_t>(chunk.bytes.size());
  if (stacks) {
    const std::vector<uint8_t> encoded = encode_stack_stream(segment_stacks);
    chunk.bytes.insert(chunk.bytes.end(), encoded.begin(), encoded.end());
  }
  chunk.bytes.shrink_to_fit();
  chunk_bytes_ += chunk.bytes.size();
  ++pt_chunks_;
  open_previous_to_ = branches.back().to;
  chunks_.push_back(std::move(chunk));
  next_sequence_ = first + branches.size();
  return true;
}

// A trace holds a branch from its first append on (drops and resizes
// keep at least one), so only an empty one may take either form.
bool BlockTrace::append(uint64_t from, uint64_t to) {
  assert(size() == 0 || !with_stacks_);
  return append_branch(Branch{from, to}, StackSnapshot{});
}

bool BlockTrace::append(uint64_t from, uint64_t to, const StackSnapshot& at_from) {
  assert(size() == 0 || with_stacks_);
  with_stacks_ = true;
  return append_branch(Branch{from, to}, at_from);
}

// A full ring: each of the run's appends would drop the oldest branch
// first; they go at once, leaving the trace as the appends would (the
// memory cap, which drops whole chunks, is left to append_branch). A
// ring that stayed full made every chunk of a long recording go through
// the open structs, copied twice (a third of btstub's thread on Lua).
// `keep_open`: only where the drop ends before the open structs (whose
// size the caller has counted on).
bool BlockTrace::make_room_for_run(std::size_t branches, bool keep_open) {
  if (has_room(branches)) return true;
  if (policy_ != OverflowPolicy::DropOldest || branches > capacity_ ||
      chunk_bytes_ + (open_.size() + branches) * kMaxBytesPerBranch > memory_cap_) {
    return false;
  }
  const uint64_t through = first_sequence_ + (size() + branches - capacity_);
  if (keep_open && through > open_first_sequence()) return false;
  drop_through(through);
  return has_room(branches);
}

std::size_t BlockTrace::append_stacked(std::span<const StackedBranch> branches, std::shared_ptr<const void> lender) {
  assert(size() == 0 || with_stacks_ || branches.empty());
  if (!branches.empty()) with_stacks_ = true;
  lender_ = std::move(lender);  // seal_stacked's to borrow
  std::size_t done = 0;
  while (done < branches.size()) {
    // A chunk straight from the open structs and the run, where one by one
    // the run would fill the open structs and its next branch seal them
    // (nothing to drop, no hold inside): the run's branches are copied
    // once, not into the open structs and out again.
    const std::size_t open = open_.size();
    const std::size_t take = open <= kChunkBranches ? kChunkBranches - open : 0;
    if (open <= kChunkBranches && branches.size() - done > take &&
        (!hold_ || *hold_ >= open_first_sequence() + kChunkBranches) && make_room_for_run(take + 1, true)) {
      const StackedBranch* const part = branches.data() + done;
      if (open == 0 && (seals_untried() || (lender_ && packer_))) {
        // Encoded from the run, not copied into a raw chunk first (that
        // copy was a tenth of the tracer's thread recording Lua, whose
        // packer is mostly busy). The open structs keep their room as below.
        give_back_grown_room(open_, open_stacks_, kChunkBranches);
        open_.reserve(kChunkBranches);
        open_stacks_.reserve(kChunkBranches);
        next_sequence_ += take;
        done += take;
        seal_stacked(std::span(part, take));
        continue;
      }
      // Inserted through MemberOf, each element written once (resizing
      // first zeroed them: a third of the work).
      std::shared_ptr<RawChunk> raw = fresh_raw();
      raw->branches.reserve(kChunkBranches);
      raw->stacks.reserve(kChunkBranches);
      raw->branches.assign(open_.begin(), open_.end());
      raw->stacks.assign(open_stacks_.begin(), open_stacks_.end());
      raw->branches.insert(raw->branches.end(), MemberOf<&StackedBranch::branch>{part},
                           MemberOf<&StackedBranch::branch>{part + take});
      raw->stacks.insert(raw->stacks.end(), MemberOf<&StackedBranch::stack>{part},
                         MemberOf<&StackedBranch::stack>{part + take});
      // They keep their room (memory the tracer's core touched last), a
      // chunk's at least, as filling them would have left it.
      open_.clear();
      open_stacks_.clear();
      give_back_grown_room(open_, open_stacks_, kChunkBranches);
      open_.reserve(kChunkBranches);
      open_stacks_.reserve(kChunkBranches);
      next_sequence_ += take;
      done += take;
      seal_raw(std::move(raw));
      continue;
    }
    // The open structs take this many more before append_branch would seal.
    const std::size_t before_seal = open_.size() < kChunkBranches ? kChunkBranches - open_.size() : 0;
    const std::size_t run = std::min({branches.size() - done, before_seal, capacity_});
    if (run > 0 && make_room_for_run(run, false)) {  // nothing to seal, nothing (more) to drop
      // A translating tracer's log was written on another core (from
      // memory or that core's cache): prefetched ahead, as
      // BranchChunkWriter::add does. This copy of a log's last part was a
      // sixth of the tracer's thread.
      const StackedBranch* const part = branches.data() + done;
      for (std::size_t i = 0; i < run; ++i) {
        prefetch_log_ahead(part, i, run);
        open_.push_back(part[i].branch);
        open_stacks_.push_back(part[i].stack);
      }
      next_sequence_ += run;
      done += run;
      continue;
    }
    // A seal, a drop, a hold or the cap: as append would, one.
    if (!append_branch(branches[done].branch, branches[done].stack)) break;
    ++done;
  }
  lend_batch();
  lender_.reset();
  return done;
}

const BlockTrace::Unpacked& BlockTrace::unpacked(uint64_t seq) const {
  // Reads come in runs: the chunk used last is the likely one.
  if (const Unpacked& last = unpacked_[last_unpacked_];
      !last.branches.empty() && seq >= last.first_sequence && seq - last.first_sequence < last.branches.size()) {
    return last;
  }
  // Chunks hold different numbers of branches (a CPU's PT segment is one
  // chunk): the one whose range holds `seq`.
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), seq,
                             [](uint64_t s, const Chunk& c) { return s < c.first_sequence; });
  const std::size_t index = static_cast<std::size_t>(it - chunks_.begin()) - 1;
  for (std::size_t i = 0; i < std::size(unpacked_); ++i) {
    if (unpacked_[i].first_sequence == chunks_[index].first_sequence && !unpacked_[i].branches.empty()) {
      last_unpacked_ = i;
      return unpacked_[i];
    }
  }
  last_unpacked_ = (last_unpacked_ + 1) % std::size(unpacked_);
  Unpacked& u = unpacked_[last_unpacked_];
  unpack(index, u);
  return u;
}

std::vector<BlockTrace::StoredSegment> BlockTrace::stored_segments(uint64_t from_seq) const {
  std::vector<StoredSegment> out;
  if (!codec_) return out;
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    const Chunk& chunk = chunks_[i];
    if (!chunk.pt || chunk.first_sequence < std::max(from_seq, first_sequence_)) continue;
    // Walked now, not taken from the unpacked cache: a reader decodes the
    // packets with the code as it is now.
    if (!codec_->unpack(chunk.bytes.data(), chunk.packet_bytes, chunk.code_hash, chunk.previous_to, chunk_end_to(i),
                        chunk.count)) {
      continue;
    }
    out.push_back(
        {chunk.first_sequence, chunk.count, std::span<const uint8_t>(chunk.bytes.data(), chunk.packet_bytes)});
  }
  return out;
}

std::optional<BlockTrace::StoredSegment> BlockTrace::stored_segment_at(uint64_t seq) const {
  if (!codec_ || seq < first_sequence_) return std::nullopt;
  const std::optional<std::size_t> found = chunk_starting_at(seq);
  if (!found || !chunks_[*found].pt) return std::nullopt;
  const std::size_t index = *found;
  const Chunk& chunk = chunks_[index];
  if (!codec_->unpack(chunk.bytes.data(), chunk.packet_bytes, chunk.code_hash, chunk.previous_to, chunk_end_to(index),
                      chunk.count)) {
    return std::nullopt;
  }
  return StoredSegment{chunk.first_sequence, chunk.count,
                       std::span<const uint8_t>(chunk.bytes.data(), chunk.packet_bytes)};
}

uint64_t BlockTrace::next_chunk_start(uint64_t seq) const {
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), seq,
                             [](uint64_t s, const Chunk& c) { return s < c.first_sequence; });
  if (it != chunks_.end()) return it->first_sequence;
  const uint64_t open_first = open_first_sequence();
  return seq < open_first ? open_first : end_sequence();
}

uint64_t BlockTrace::chunk_end_to(std::size_t index) const {
  return index + 1 < chunks_.size() ? chunks_[index + 1].previous_to : open_previous_to_;
}

void BlockTrace::unpack(std::size_t index, Unpacked& u) const {
  const Chunk& chunk = chunks_[index];
  u.first_sequence = chunk.first_sequence;
  if (chunk.raw) {
    u.branches = chunk.raw->branches;
    u.stacks = chunk.raw->stacks;
    return;
  }
  if (!chunk.pt && chunk.bytes.empty()) {
    // Borrowed: read where the lender keeps it.
    if (auto batch = borrowed_.upper_bound(chunk.first_sequence); batch != borrowed_.begin()) {
      --batch;
      const std::span<const StackedBranch> run = batch->second.lent->run;
      const uint64_t at = chunk.first_sequence - batch->first;
      if (at + chunk.count <= run.size()) {
        const StackedBranch* begin = run.data() + at;
        const StackedBranch* end = begin + chunk.count;
        u.branches.assign(MemberOf<&StackedBranch::branch>{begin}, MemberOf<&StackedBranch::branch>{end});
        u.stacks.assign(MemberOf<&StackedBranch::stack>{begin}, MemberOf<&StackedBranch::stack>{end});
        if (!with_stacks_) u.stacks.clear();
        return;
      }
    }
  }
  if (!chunk.pt) {
    const bool ok = decode_branch_chunk(chunk.bytes, chunk.previous_to, with_stacks_, chunk.count, u.branches,
                                        u.stacks);
    assert(ok);
    (void)ok;
    return;
  }
  const uint64_t end_to = chunk_end_to(index);
  std::optional<std::vector<Branch>> branches;
  if (codec_) {
    branches = codec_->unpack(chunk.bytes.data(), chunk.packet_bytes, chunk.code_hash, chunk.previous_to, end_to,
                              chunk.count);
  }
  if (branches) {
    u.branches = std::move(*branches);
  } else {
    // The code under the chunk changed (or cannot be read): what ran there
    // is unknown now. Gaps, never branches through code that was not run.
    u.branches.assign(chunk.count, Branch{kGapAddress, kGapAddress});
    u.branches.back().to = end_to;
  }
  u.stacks.clear();
  if (with_stacks_) {
    const bool ok = decode_stack_stream(chunk.bytes.data() + chunk.packet_bytes,
                                        chunk.bytes.size() - chunk.packet_bytes, chunk.count, u.stacks);
    assert(ok);
    (void)ok;
  }
}

Branch BlockTrace::at(uint64_t seq) const {
  const uint64_t open_first = open_first_sequence();
  if (seq >= open_first) return open_[static_cast<std::size_t>(seq - open_first)];
  const Unpacked& u = unpacked(seq);
  return u.branches[static_cast<std::size_t>(seq - u.first_sequence)];
}

StackSnapshot BlockTrace::stack_at(uint64_t seq) const {
  const uint64_t open_first = open_first_sequence();
  if (seq >= open_first) return open_stacks_[static_cast<std::size_t>(seq - open_first)];
  const Unpacked& u = unpacked(seq);
  return u.stacks[static_cast<std::size_t>(seq - u.first_sequence)];
}

uint64_t BlockTrace::oldest_begin() const {
  if (chunks_.empty()) return open_previous_to_;
  if (first_sequence_ == chunks_.front().first_sequence) return chunks_.front().previous_to;
  return at(first_sequence_ - 1).to;  // dropped, but still in the oldest chunk
}

std::vector<Block> BlockTrace::blocks(uint64_t from_seq, uint64_t current_pc) const {
  std::vector<Block> out;
  out.reserve(static_cast<std::size_t>(end_sequence() - from_seq) + 1);
  uint64_t begin = from_seq == first_sequence() ? oldest_begin() : at(from_seq - 1).to;
  for (uint64_t seq = from_seq; seq < end_sequence(); ++seq) {
    const Branch b = at(seq);
    out.push_back(Block{begin, b.from});
    begin = b.to;
  }
  out.push_back(Block{begin, current_pc});
  return out;
}

void BlockTrace::clear(uint64_t origin) {
  chunks_.clear();
  chunk_bytes_ = 0;
  pt_chunks_ = 0;
  open_.clear();
  open_stacks_.clear();
  open_.shrink_to_fit();
  open_stacks_.shrink_to_fit();
  forget_unpacked();
  open_previous_to_ = origin;
  first_sequence_ = next_sequence_;
  hold_.reset();
  with_stacks_ = false;
  signals_.clear();
  backlog_.clear();
  borrowed_.clear();  // their chunks are gone
  batch_ = Batch{};
  if (packer_) inbox_ = std::make_shared<PackInbox>();  // what was handed over before is dropped
}

void BlockTrace::mark_signal(uint64_t sequence, uint64_t pc, int signal) {
  // Marks of dropped blocks go here rather than at every drop: signals are
  // few, branches many.
  signals_.erase(signals_.begin(), signals_.lower_bound({first_sequence_, 0}));
  if (sequence < first_sequence_ || sequence > next_sequence_) return;
  signals_[{sequence, pc}] = signal;
}

int BlockTrace::signal_at(uint64_t sequence, uint64_t pc) const {
  if (sequence < first_sequence_) return 0;
  auto it = signals_.find({sequence, pc});
  return it == signals_.end() ? 0 : it->second;
}

bool BlockTrace::signal_in(uint64_t sequence) const {
  if (sequence < first_sequence_) return false;
  auto it = signals_.lower_bound({sequence, 0});
  return it != signals_.end() && it->first.first == sequence;
}

void BlockTrace::resize(std::size_t capacity_records) {
  capacity_ = std::max<std::size_t>(capacity_records, 1);
  if (size() > capacity_) drop_through(next_sequence_ - capacity_);
  open_.shrink_to_fit();
  open_stacks_.shrink_to_fit();
}

std::size_t bts_records_for_bytes(uint64_t bytes) {
  return static_cast<std::size_t>(std::max<uint64_t>(bytes / BlockTrace::kBtsRecordSize, 1));
}

}  // namespace decoder
