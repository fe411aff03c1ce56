#pragma once
// What running the translating tracer's translations in the test's own
// process takes (decoder/block_translator.h): the thread's area (slots at
// the gs base, the indirect-target table above, the log below) and a code
// cache mapped within reach of the code translated. Shared by
// tests/unit/decoder/test_block_translator.cc, which checks what the
// translations do, and tests/bench/translated_code_bench.cc, which times
// them; each plays the tracer its own way.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "decoder/block_translator.h"

namespace test_translation {

inline uint64_t address_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

class ThreadArea {
 public:
  // Room for `capacity` records; the table empty as the tracer leaves it
  // (decoder::empty_indirect_entry).
  explicit ThreadArea(std::size_t capacity)
      : capacity_(capacity), words_(kWords * capacity + decoder::kThreadAreaAboveBase / 8) {
    reset();
    const auto zero = static_cast<int32_t>(decoder::indirect_entry_offset(0));
    std::memcpy(&slot(zero), decoder::empty_indirect_entry(static_cast<uint64_t>(zero)).data(),
                decoder::kIndirectEntrySize);
  }
  uint64_t base() const { return address_of(words_.data() + kWords * capacity_); }
  uint64_t& slot(int32_t offset) { return words_[kWords * capacity_ + offset / 8]; }
  // The log emptied: the cursor at its start.
  void reset() { slot(decoder::kSlotLogCursor) = -static_cast<uint64_t>(decoder::kLogRecordSize * capacity_); }
  // Records written since the last reset, and the i-th of them.
  std::size_t used() {
    return capacity_ - static_cast<std::size_t>(-slot(decoder::kSlotLogCursor)) / decoder::kLogRecordSize;
  }
  decoder::LogRecord record(std::size_t i) const {
    const uint64_t* r = &words_[kWords * i];
    return {r[0], r[1], r[2], r[3]};
  }
  // Sends indirect transfers to `original` straight to `cache_address`.
  void enter_indirect(uint64_t original, uint64_t cache_address) {
    const auto at = static_cast<int32_t>(decoder::indirect_entry_offset(original));
    slot(at) = -original;
    slot(at + 8) = cache_address;
  }

 private:
  static constexpr std::size_t kWords = decoder::kLogRecordSize / 8;
  std::size_t capacity_;
  std::vector<uint64_t> words_;
};

// `size` bytes of cache within 1 GiB of `code` (RIP-relative operands
// reach 2 GiB); ok() false where there is no room.
class CodeCache {
 public:
  CodeCache(uint64_t code, std::size_t size) : size_(size) {
    const uint64_t near = code & ~uint64_t{0xffff};
    for (uint64_t distance = 64 << 20; distance < (1ull << 30) && base_ == nullptr; distance += 64 << 20) {
      for (uint64_t hint : {near - distance, near + distance}) {
        void* p = ::mmap(reinterpret_cast<void*>(hint), size, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != MAP_FAILED) {
          base_ = static_cast<uint8_t*>(p);
          break;
        }
      }
    }
  }
  ~CodeCache() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  CodeCache(const CodeCache&) = delete;
  CodeCache& operator=(const CodeCache&) = delete;

  bool ok() const { return base_ != nullptr; }
  uint64_t next() const { return address_of(base_ + used_); }
  // Copies `t` in at next(), which it was translated for; false when full.
  bool install(const decoder::Translation& t) {
    if (used_ + t.code.size() > size_) return false;
    std::memcpy(base_ + used_, t.code.data(), t.code.size());
    used_ += (t.code.size() + 15) & ~std::size_t{15};
    return true;
  }

 private:
  std::size_t size_;
  uint8_t* base_ = nullptr;
  std::size_t used_ = 0;
};

}  // namespace test_translation
