#include "decoder/branch_chunk.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstring>

#include <emmintrin.h>

namespace decoder {
namespace {

using Prediction = BranchChunkWriter::Prediction;
using Predictor = BranchChunkWriter::Predictor;

std::size_t predictor_slot(uint64_t block_start) {
  return static_cast<std::size_t>((block_start * 0x9E3779B97F4A7C15ull) >> (64 - BranchChunkWriter::kPredictorBits));
}

// The head's flags: what of a written branch its prediction gave.
constexpr uint64_t kFromPredicted = 4;
constexpr uint64_t kToPredicted = 2;
constexpr uint64_t kStackPredicted = 1;
constexpr uint64_t kFlagBits = 3;
// All three: never a written branch's, so the chunk's last head.
constexpr uint64_t kEndFlags = kFromPredicted | kToPredicted | kStackPredicted;

// Zigzag: small negative differences become small unsigned numbers.
uint64_t zigzag(uint64_t difference) {
  const int64_t d = static_cast<int64_t>(difference);
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}
uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

// The head carries a 64-bit zigzag value and two flags: 66 bits.
using Wide = unsigned __int128;

// At most 10 bytes for a value of up to 70 bits.
constexpr std::size_t kMaxVarintBytes = 10;
// A branch's head, length, target difference, rsp head and rbp difference.
constexpr std::size_t kMaxBranchBytes = 5 * kMaxVarintBytes;
// Room a writer starts with: a chunk of 4,096 branches of a program's
// loops takes 1-8 KiB.
constexpr std::size_t kInitialBytes = 4096;

[[gnu::always_inline]] inline uint8_t* write_varint64(uint8_t* out, uint64_t value) {
  while (value >= 0x80) {
    *out++ = static_cast<uint8_t>(value) | 0x80;
    value >>= 7;
  }
  *out++ = static_cast<uint8_t>(value);
  return out;
}

// The same bytes for a wider value; a head is that wide only where a
// trace has a gap, so the 64-bit loop takes all but those.
[[gnu::always_inline]] inline uint8_t* write_varint(uint8_t* out, Wide value) {
  if ((value >> 64) == 0) return write_varint64(out, static_cast<uint64_t>(value));
  while (value >= 0x80) {
    *out++ = static_cast<uint8_t>(value) | 0x80;
    value >>= 7;
  }
  *out++ = static_cast<uint8_t>(value);
  return out;
}

void put_varint(std::vector<uint8_t>& out, Wide value) {
  uint8_t bytes[kMaxVarintBytes];
  out.insert(out.end(), bytes, write_varint(bytes, value));
}

bool get_varint(const uint8_t* in, std::size_t size, std::size_t& pos, Wide& value) {
  value = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (pos >= size) return false;
    const uint8_t byte = in[pos++];
    value |= static_cast<Wide>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool get_u64(const uint8_t* in, std::size_t size, std::size_t& pos, uint64_t& value) {
  Wide wide = 0;
  if (!get_varint(in, size, pos, wide) || (wide >> 64) != 0) return false;
  value = static_cast<uint64_t>(wide);
  return true;
}

bool get_u64(const std::vector<uint8_t>& in, std::size_t& pos, uint64_t& value) {
  return get_u64(in.data(), in.size(), pos, value);
}

// A snapshot's difference from the one before: rsp's, and rbp's if it changed.
[[gnu::always_inline]] inline uint8_t* write_stack_delta(uint8_t* out, const StackSnapshot& stack, const StackSnapshot& previous) {
  const bool rbp_changed = stack.rbp != previous.rbp;
  const uint64_t rsp_z = zigzag(stack.rsp - previous.rsp);
  if (rsp_z < (uint64_t{1} << 63)) [[likely]] {
    out = write_varint64(out, rsp_z << 1 | uint64_t{rbp_changed});
  } else {
    out = write_varint(out, static_cast<Wide>(rsp_z) << 1 | Wide{rbp_changed});
  }
  if (rbp_changed) out = write_varint64(out, zigzag(stack.rbp - previous.rbp));
  return out;
}

void put_stack_delta(std::vector<uint8_t>& out, const StackSnapshot& stack, const StackSnapshot& previous) {
  uint8_t bytes[2 * kMaxVarintBytes];
  out.insert(out.end(), bytes, write_stack_delta(bytes, stack, previous));
}

bool get_stack_delta(const uint8_t* in, std::size_t size, std::size_t& pos, StackSnapshot& stack) {
  Wide rsp_head = 0;
  if (!get_varint(in, size, pos, rsp_head) || (rsp_head >> 65) != 0) return false;
  stack.rsp += unzigzag(static_cast<uint64_t>(rsp_head >> 1));
  if (rsp_head & 1) {
    uint64_t z = 0;
    if (!get_u64(in, size, pos, z)) return false;
    stack.rbp += unzigzag(z);
  }
  return true;
}

}  // namespace

namespace {

// A spent writer's or decoder's predictor, kept for the next on the same
// thread (a fresh 192 KiB table a chunk was more to clear than the chunk's
// encoding).
thread_local std::unique_ptr<Predictor> spare_predictor;

std::unique_ptr<Predictor> take_predictor() {
  std::unique_ptr<Predictor> predictor = std::move(spare_predictor);
  if (!predictor) return std::make_unique<Predictor>();
  ++predictor->generation;  // the last user's entries are empty from now on
  return predictor;
}

void give_back(std::unique_ptr<Predictor> predictor) {
  if (predictor && !spare_predictor) spare_predictor = std::move(predictor);
}

}  // namespace

BranchChunkWriter::BranchChunkWriter(uint64_t previous_to, bool with_stacks)
    : predictor_(take_predictor()), previous_to_(previous_to), with_stacks_(with_stacks) {}

BranchChunkWriter::~BranchChunkWriter() { give_back(std::move(predictor_)); }

namespace {

// What a writer carries from one branch to the next, as locals while a run
// is written: stores through the byte pointer may alias a member, which the
// compiler would then load again after every byte.
struct WriterState {
  uint8_t* out;
  Prediction* entries;
  uint64_t generation;
  uint64_t previous_to;
  StackSnapshot previous_stack;
  uint64_t predicted_run;
};

// Writes one branch at state.out (room for kMaxBranchBytes there), or
// counts it when its block's entry predicts it whole.
[[gnu::always_inline]] inline void write_branch(WriterState& state, bool with_stacks, const Branch& branch,
                                                const StackSnapshot& stack) {
  Prediction& predicted = state.entries[predictor_slot(state.previous_to)];
  // Compared without a jump each: one jump on the outcome of all.
  const bool seen = (predicted.generation == state.generation) & (predicted.key == state.previous_to);
  // Without stacks every snapshot is {0, 0}: no move, always predicted.
  // An entry not seen predicts an unmoved stack (the decoder does the same).
  const uint64_t rsp_moved = stack.rsp - state.previous_stack.rsp;
  const uint64_t rbp_moved = stack.rbp - state.previous_stack.rbp;
  const uint64_t rsp_predicted = seen ? predicted.rsp_moved : 0;
  const uint64_t rbp_predicted = seen ? predicted.rbp_moved : 0;
  const bool from_predicted = seen & (predicted.from == branch.from);
  const bool to_predicted = seen & (predicted.to == branch.to);
  const bool stack_predicted = (rsp_moved == rsp_predicted) & (rbp_moved == rbp_predicted);
  const uint64_t flags = (from_predicted ? kFromPredicted : 0) | (to_predicted ? kToPredicted : 0) |
                         (stack_predicted ? kStackPredicted : 0);
  if (flags == kEndFlags) [[likely]] {
    ++state.predicted_run;
  } else {
    uint8_t* end = write_varint64(state.out, state.predicted_run << kFlagBits | flags);
    state.predicted_run = 0;
    if (!(flags & kFromPredicted)) end = write_varint64(end, zigzag(branch.from - state.previous_to));
    if (!(flags & kToPredicted)) end = write_varint64(end, zigzag(branch.to - branch.from));
    if (!(flags & kStackPredicted)) end = write_stack_delta(end, stack, state.previous_stack);
    state.out = end;
    // (A branch predicted whole leaves its entry as it is: rewriting the
    // same values was a twentieth of the encoding.)
    predicted = {branch.from, branch.to, rsp_moved, rbp_moved, state.previous_to, state.generation};
  }
  if (with_stacks) state.previous_stack = stack;
  state.previous_to = branch.to;
}

}  // namespace

void BranchChunkWriter::add(const Branch& branch, const StackSnapshot& stack) {
  add(std::span(&branch, 1), std::span(&stack, with_stacks_ ? 1 : 0));
}

void BranchChunkWriter::add(std::span<const Branch> branches, std::span<const StackSnapshot> stacks) {
  // Written in place past size_, into room made for the whole run (left
  // unzeroed: every byte up to size_ is written before it is read): a
  // push_back per byte was a sixth of the tracer's own time recording.
  const std::size_t need = size_ + branches.size() * kMaxBranchBytes;
  if (capacity_ < need) grow(need);
  assert(!with_stacks_ || stacks.size() >= branches.size());
  WriterState state{bytes_.get() + size_, predictor_->entries.data(), predictor_->generation,
                    previous_to_,         previous_stack_,                 predicted_run_};
  if (with_stacks_) {
    for (std::size_t i = 0; i < branches.size(); ++i) write_branch(state, true, branches[i], stacks[i]);
  } else {
    for (const Branch& branch : branches) write_branch(state, false, branch, StackSnapshot{});
  }
  size_ = static_cast<std::size_t>(state.out - bytes_.get());
  previous_to_ = state.previous_to;
  previous_stack_ = state.previous_stack;
  predicted_run_ = state.predicted_run;
}

void BranchChunkWriter::add(std::span<const StackedBranch> branches) {
  const std::size_t need = size_ + branches.size() * kMaxBranchBytes;
  if (capacity_ < need) grow(need);
  WriterState state{bytes_.get() + size_, predictor_->entries.data(), predictor_->generation,
                    previous_to_,         previous_stack_,                 predicted_run_};
  // A tracer's log comes from memory or another core's cache: the
  // translated code writes it on the program's core, with non-temporal
  // stores or prefetched plain ones (decoder/block_translator.h). The
  // hardware's prefetch of the stream ran short of it, and waiting for the
  // log's lines was half the encoding (recording Lua with non-temporal
  // stores: the continue took 1.3-1.4x as long without this).
  const StackedBranch* const log = branches.data();
  const std::size_t n = branches.size();
  if (with_stacks_) {
    // A record predicted whole is told with two vector compares: {from,
    // to} against the entry's, {rsp, rbp} less the previous record's
    // against its moves (scalar, the same test was three fifths of the
    // instructions of a predicted branch).
    static_assert(sizeof(StackedBranch) == 32 && offsetof(StackedBranch, stack) == 16);
    static_assert(offsetof(Prediction, rsp_moved) == 16);
    __m128i previous_stack = _mm_set_epi64x(static_cast<long long>(state.previous_stack.rbp),
                                            static_cast<long long>(state.previous_stack.rsp));
    for (std::size_t i = 0; i < n; ++i) {
      prefetch_log_ahead(log, i, n);
      const StackedBranch& record = log[i];
      const __m128i from_to = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&record.branch));
      const __m128i stack = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&record.stack));
      const Prediction& predicted = state.entries[predictor_slot(state.previous_to)];
      const __m128i same =
          _mm_and_si128(_mm_cmpeq_epi32(from_to, _mm_load_si128(reinterpret_cast<const __m128i*>(&predicted.from))),
                        _mm_cmpeq_epi32(_mm_sub_epi64(stack, previous_stack),
                                        _mm_load_si128(reinterpret_cast<const __m128i*>(&predicted.rsp_moved))));
      if (_mm_movemask_epi8(same) == 0xffff && predicted.key == state.previous_to &&
          predicted.generation == state.generation) [[likely]] {
        ++state.predicted_run;  // its entry already holds it
        state.previous_to = record.branch.to;
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(&state.previous_stack), previous_stack);
        write_branch(state, true, record.branch, record.stack);
      }
      previous_stack = stack;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&state.previous_stack), previous_stack);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      prefetch_log_ahead(log, i, n);
      write_branch(state, false, log[i].branch, StackSnapshot{});
    }
  }
  size_ = static_cast<std::size_t>(state.out - bytes_.get());
  previous_to_ = state.previous_to;
  previous_stack_ = state.previous_stack;
  predicted_run_ = state.predicted_run;
}

namespace {

// A spent writer's room, kept for the next writer on the same thread: a
// fresh buffer a chunk, taken from the heap between the chunks' kept bytes,
// kept the heap growing into memory the kernel had to fault in and zero
// (a fifth of btstub's thread recording Lua). At most kMaxSpareBytes.
struct SpareRoom {
  std::unique_ptr<uint8_t[]> bytes;
  std::size_t capacity = 0;
};
thread_local SpareRoom spare_room;
constexpr std::size_t kMaxSpareBytes = std::size_t{1} << 20;

}  // namespace

void BranchChunkWriter::grow(std::size_t need) {
  const std::size_t capacity = std::max({2 * capacity_, kInitialBytes, need});
  if (size_ == 0 && spare_room.capacity >= capacity) {
    bytes_ = std::move(spare_room.bytes);
    capacity_ = spare_room.capacity;
    spare_room.capacity = 0;
    return;
  }
  auto bytes = std::make_unique_for_overwrite<uint8_t[]>(capacity);
  if (size_ > 0) std::memcpy(bytes.get(), bytes_.get(), size_);
  bytes_ = std::move(bytes);
  capacity_ = capacity;
}

std::vector<uint8_t> BranchChunkWriter::take() {
  if (capacity_ < size_ + kMaxVarintBytes) grow(size_ + kMaxVarintBytes);
  size_ = static_cast<std::size_t>(write_varint64(bytes_.get() + size_, predicted_run_ << kFlagBits | kEndFlags) -
                                   bytes_.get());
  predicted_run_ = 0;
  give_back(std::move(predictor_));
  std::vector<uint8_t> bytes(bytes_.get(), bytes_.get() + size_);
  if (capacity_ > spare_room.capacity && capacity_ <= kMaxSpareBytes) {
    spare_room = SpareRoom{std::move(bytes_), capacity_};
  }
  bytes_.reset();
  capacity_ = size_ = 0;
  return bytes;
}

namespace {

// decode_branch_chunk's work, with a predictor of the writer's kind.
bool decode_with(Predictor& predictor, const std::vector<uint8_t>& bytes, uint64_t previous_to, bool with_stacks,
                 std::size_t count, std::vector<Branch>& branches, std::vector<StackSnapshot>& stacks) {
  Prediction* const entries = predictor.entries.data();
  const uint64_t generation = predictor.generation;
  StackSnapshot stack;
  std::size_t pos = 0;
  // One branch, from its block's entry where `flags` say so, else from the
  // bytes; false on bytes that cannot be the writer's.
  const auto next_branch = [&](uint64_t flags) {
    Prediction& predicted = entries[predictor_slot(previous_to)];
    const bool seen = predicted.generation == generation && predicted.key == previous_to;
    if ((flags & (kFromPredicted | kToPredicted)) != 0 && !seen) return false;
    Branch branch;
    uint64_t value = 0;
    if (flags & kFromPredicted) {
      branch.from = predicted.from;
    } else {
      if (!get_u64(bytes, pos, value)) return false;
      branch.from = previous_to + unzigzag(value);
    }
    if (flags & kToPredicted) {
      branch.to = predicted.to;
    } else {
      if (!get_u64(bytes, pos, value)) return false;
      branch.to = branch.from + unzigzag(value);
    }
    const StackSnapshot previous_stack = stack;
    if (flags & kStackPredicted) {
      if (seen) {
        stack.rsp += predicted.rsp_moved;
        stack.rbp += predicted.rbp_moved;
      }
    } else if (!with_stacks || !get_stack_delta(bytes.data(), bytes.size(), pos, stack)) {
      return false;
    }
    predicted = {branch.from, branch.to, stack.rsp - previous_stack.rsp, stack.rbp - previous_stack.rbp, previous_to,
                 generation};
    previous_to = branch.to;
    branches.push_back(branch);
    if (with_stacks) stacks.push_back(stack);
    return true;
  };
  for (;;) {
    uint64_t head = 0;
    if (!get_u64(bytes, pos, head)) return false;
    const uint64_t run = head >> kFlagBits;
    const uint64_t flags = head & kEndFlags;
    const std::size_t left = count - branches.size();
    // The run, and the written branch after it unless this is the end.
    if (run > left || (flags != kEndFlags && run == left)) return false;
    for (uint64_t i = 0; i < run; ++i) {
      if (!next_branch(kEndFlags)) return false;
    }
    if (flags == kEndFlags) return branches.size() == count && pos == bytes.size();
    if (!next_branch(flags)) return false;
  }
}

}  // namespace

bool decode_branch_chunk(const std::vector<uint8_t>& bytes, uint64_t previous_to, bool with_stacks,
                         std::size_t count, std::vector<Branch>& branches,
                         std::vector<StackSnapshot>& stacks) {
  branches.clear();
  stacks.clear();
  branches.reserve(count);
  if (with_stacks) stacks.reserve(count);
  std::unique_ptr<Predictor> predictor = take_predictor();
  const bool decoded = decode_with(*predictor, bytes, previous_to, with_stacks, count, branches, stacks);
  give_back(std::move(predictor));
  return decoded;
}

std::vector<uint8_t> encode_stack_stream(const std::vector<StackSnapshot>& stacks) {
  std::vector<uint8_t> out;
  StackSnapshot previous;
  std::size_t same = 0;
  for (const StackSnapshot& stack : stacks) {
    if (stack == previous) {
      ++same;
      continue;
    }
    put_varint(out, same);
    put_stack_delta(out, stack, previous);
    previous = stack;
    same = 0;
  }
  out.shrink_to_fit();
  return out;
}

bool decode_stack_stream(const uint8_t* bytes, std::size_t size, std::size_t count,
                         std::vector<StackSnapshot>& stacks) {
  stacks.clear();
  stacks.reserve(count);
  StackSnapshot stack;
  std::size_t pos = 0;
  while (pos < size) {
    uint64_t same = 0;
    if (!get_u64(bytes, size, pos, same) || same > count - stacks.size()) return false;
    stacks.insert(stacks.end(), static_cast<std::size_t>(same), stack);
    if (stacks.size() == count || !get_stack_delta(bytes, size, pos, stack)) return false;
    stacks.push_back(stack);
  }
  stacks.resize(count, stack);
  return true;
}

}  // namespace decoder
