#pragma once
// The decoder sees code and data only through these interfaces, so it never
// touches the OS: the stub adapts them to the inferior's ORIGINAL bytes
// (breakpoint int3s removed), tests adapt them to plain buffers.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace decoder {

class CodeReader {
 public:
  virtual ~CodeReader() = default;
  // Copies up to `len` bytes starting at `addr` into `out` and returns how
  // many were copied; a short count means the readable range ended there.
  virtual std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) = 0;
};

// Data memory has the same shape; the alias keeps call sites self-describing.
using MemoryReader = CodeReader;

// A reader over one contiguous buffer mapped at `base`; reads outside it are
// short or empty. Useful for tests and for decoding already-fetched bytes.
class BufferReader final : public CodeReader {
 public:
  BufferReader(uint64_t base, const uint8_t* data, std::size_t size)
      : base_(base), data_(data), size_(size) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override;

 private:
  uint64_t base_;
  const uint8_t* data_;
  std::size_t size_;
};

// A reader that fetches whole pages and keeps them: decoding a history
// reads the same few pages for every instruction, and each fetch from a
// program is a system call. Subclasses say how a page is fetched (short or
// empty where the mapping ends); clear() when the program ran.
class PageCachedReader : public CodeReader {
 public:
  static constexpr uint64_t kPageSize = 4096;
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) final;
  void clear() {
    pages_.clear();
    last_ = nullptr;
  }

 protected:
  virtual std::vector<uint8_t> fetch_page(uint64_t page) = 0;

 private:
  const std::vector<uint8_t>& page_at(uint64_t page);
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
  // The page read last: a decoder reads instruction after instruction from
  // the same page, and the map's lookup was most of each read's cost.
  // (Nodes of pages_ stay where they are until clear().)
  uint64_t last_page_ = 0;
  const std::vector<uint8_t>* last_ = nullptr;
};

}  // namespace decoder
