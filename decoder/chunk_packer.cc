#include "decoder/chunk_packer.h"

#include <algorithm>
#include <utility>

#include "decoder/branch_chunk.h"

namespace decoder {

namespace {

// Blocks longer than this are not walked from a snapshot (nor, in
// practice, at all: no straight-line run of code is that long).
constexpr uint64_t kMaxBlockBytes = 1 << 16;
// The longest x86 instruction: one starting at a block's end may reach
// into the next page.
constexpr uint64_t kMaxInstructionBytes = 15;
constexpr uint64_t kPageSize = CodeSnapshot::kPageSize;

}  // namespace

std::optional<std::vector<uint64_t>> snapshot_pages(uint64_t previous_to, const std::vector<Branch>& branches,
                                                    std::size_t max_pages) {
  // Sorted, at most max_pages (32): a search is a few compares and needs
  // no node per page, and a chunk's thousand blocks mostly lie on the
  // pages the block before it covered.
  std::vector<uint64_t> pages;
  pages.reserve(max_pages);
  uint64_t last_first = 1, last_last = 0;  // the pages the previous block covered
  auto cover = [&](uint64_t begin, uint64_t end) {
    if (end < begin || end - begin > kMaxBlockBytes || end > UINT64_MAX - kMaxInstructionBytes) return false;
    const uint64_t first = begin & ~(kPageSize - 1);
    const uint64_t last = (end + kMaxInstructionBytes) & ~(kPageSize - 1);
    if (first == last_first && last == last_last) return true;
    for (uint64_t page = first;; page += kPageSize) {  // (no wrap past the top page)
      auto at = std::lower_bound(pages.begin(), pages.end(), page);
      if (at == pages.end() || *at != page) {
        if (pages.size() >= max_pages) return false;
        pages.insert(at, page);
      }
      if (page == last) break;
    }
    last_first = first;
    last_last = last;
    return true;
  };
  uint64_t begin = previous_to;
  for (const Branch& b : branches) {
    if (!cover(begin, b.from)) return std::nullopt;
    begin = b.to;
  }
  if (!branches.empty() && !cover(begin, begin)) return std::nullopt;
  return pages;
}

namespace {

// exceeds_snapshot_pages over `count` branches, branch i being branch(i).
template <typename BranchAt>
bool exceeds_pages(uint64_t previous_to, std::size_t count, BranchAt branch, std::size_t max_pages,
                   std::size_t every) {
  constexpr std::size_t kWords = 1024 / 64;
  uint64_t seen[kWords] = {};
  std::size_t pages = 0;  // the bits set
  uint64_t last_first = 1, last_last = 0;  // the pages the previous block covered
  // The pages of each block as snapshot_pages walks them, one bit each,
  // with no search; a block on the pages of the one before (most of them)
  // sets nothing.
  auto cover = [&](uint64_t begin, uint64_t end) {
    if (end < begin || end - begin > kMaxBlockBytes || end > UINT64_MAX - kMaxInstructionBytes) return false;
    const uint64_t first = begin / kPageSize;
    const uint64_t last = (end + kMaxInstructionBytes) / kPageSize;
    if (first == last_first && last == last_last) return true;
    for (uint64_t page = first; page <= last; ++page) {
      uint64_t& word = seen[(page / 64) % kWords];
      const uint64_t bit = uint64_t{1} << (page % 64);
      pages += (word & bit) == 0;
      word |= bit;
    }
    last_first = first;
    last_last = last;
    return true;
  };
  // Block i runs from the branch before it (or previous_to) to branch i.
  const std::size_t step = std::max<std::size_t>(every, 1);
  for (std::size_t i = 0; i < count; i += step) {
    const uint64_t begin = i == 0 ? previous_to : branch(i - 1).to;
    if (!cover(begin, branch(i).from) || pages > max_pages) return true;  // most of an interpreter's chunks, early
  }
  if (count > 0 && !cover(branch(count - 1).to, branch(count - 1).to)) return true;
  return pages > max_pages;
}

}  // namespace

bool exceeds_snapshot_pages(uint64_t previous_to, const std::vector<Branch>& branches, std::size_t max_pages,
                            std::size_t every) {
  return exceeds_pages(
      previous_to, branches.size(), [&](std::size_t i) -> const Branch& { return branches[i]; }, max_pages, every);
}

bool exceeds_snapshot_pages(uint64_t previous_to, std::span<const StackedBranch> branches, std::size_t max_pages,
                            std::size_t every) {
  return exceeds_pages(
      previous_to, branches.size(), [&](std::size_t i) -> const Branch& { return branches[i].branch; }, max_pages,
      every);
}

std::shared_ptr<CodeSnapshot> CodeSnapshot::take(CodeReader& code, uint64_t previous_to,
                                                 const std::vector<Branch>& branches, std::size_t max_pages) {
  const std::optional<std::vector<uint64_t>> pages = snapshot_pages(previous_to, branches, max_pages);
  if (!pages) return nullptr;
  auto snapshot = std::make_shared<CodeSnapshot>();
  for (uint64_t page : *pages) {
    std::vector<uint8_t> bytes(kPageSize);
    bytes.resize(code.read(page, bytes.data(), bytes.size()));
    snapshot->pages_.emplace(page, std::move(bytes));
  }
  return snapshot;
}

std::size_t CodeSnapshot::read(uint64_t addr, uint8_t* out, std::size_t len) {
  std::size_t n = 0;
  while (n < len) {
    const uint64_t at = addr + n;
    auto page = pages_.find(at & ~(kPageSize - 1));
    if (page == pages_.end()) break;
    const std::size_t offset = static_cast<std::size_t>(at - page->first);
    if (offset >= page->second.size()) break;
    const std::size_t take = std::min(len - n, page->second.size() - offset);
    std::copy_n(page->second.begin() + static_cast<std::ptrdiff_t>(offset), take, out + n);
    n += take;
  }
  return n;
}

std::vector<uint8_t> encode_explicit(const RawChunk& raw, uint64_t previous_to, bool with_stacks) {
  BranchChunkWriter writer(previous_to, with_stacks);
  writer.add(raw.branches, with_stacks ? std::span<const StackSnapshot>(raw.stacks) : std::span<const StackSnapshot>());
  return writer.take();
}

std::vector<uint8_t> encode_explicit(std::span<const StackedBranch> run, uint64_t previous_to, bool with_stacks) {
  BranchChunkWriter writer(previous_to, with_stacks);
  writer.add(run);
  return writer.take();
}

PackResult unrun_pack_job(const PackJob& job) {
  PackResult result;
  result.first_sequence = job.first_sequence;
  result.count = job.raw ? static_cast<uint32_t>(job.raw->branches.size()) : 0;
  return result;
}

void encode_lent(LentRun& lent) {
  for (;;) {
    const std::size_t j = lent.next.fetch_add(1, std::memory_order_relaxed);
    if (j >= lent.chunks()) return;
    const std::size_t at = j * lent.chunk;
    const std::span<const StackedBranch> chunk = lent.run.subspan(at, std::min(lent.chunk, lent.run.size() - at));
    lent.bytes[j] = encode_explicit(chunk, j == 0 ? lent.previous_to : lent.run[at - 1].branch.to, lent.with_stacks);
    lent.done.fetch_add(1, std::memory_order_release);
  }
}

PackResult run_pack_job(const PackJob& job, SegmentPacker& packer) {
  PackResult result = unrun_pack_job(job);
  if (job.lent) {
    encode_lent(*job.lent);
    return result;
  }
  if (!job.raw) return result;
  const std::vector<Branch>& branches = job.raw->branches;
  const std::vector<StackSnapshot>& stacks = job.raw->stacks;
  if (job.code) result.segment = packer.pack(*job.code, job.previous_to, branches);
  if (result.segment) {
    result.packet_bytes = static_cast<uint32_t>(result.segment->bytes.size());
    if (job.with_stacks) {
      const std::vector<uint8_t> encoded = encode_stack_stream(stacks);
      result.segment->bytes.insert(result.segment->bytes.end(), encoded.begin(), encoded.end());
      result.segment->bytes.shrink_to_fit();
    }
    return result;
  }
  if (job.code && !job.encode_unpacked) return result;
  if (job.with_stacks && stacks.size() != branches.size()) return result;  // a caller bug: the trace encodes it
  result.explicit_bytes = encode_explicit(*job.raw, job.previous_to, job.with_stacks);
  return result;
}

void PackInbox::expect_one() {
  std::lock_guard lock(mutex_);
  ++pending_;
}

void PackInbox::put(PackResult result) {
  std::lock_guard lock(mutex_);
  if (pending_ > 0) --pending_;
  done_.push_back(std::move(result));
  has_done_.store(true, std::memory_order_release);
  if (pending_ == 0) idle_.notify_all();
}

void PackInbox::take(std::vector<PackResult>& out) {
  out.clear();
  if (!has_done_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  has_done_.store(false, std::memory_order_relaxed);
  out.swap(done_);
}

std::size_t PackInbox::pending() const {
  std::lock_guard lock(mutex_);
  return pending_;
}

void PackInbox::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace decoder
