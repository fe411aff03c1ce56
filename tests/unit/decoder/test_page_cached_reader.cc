// decoder::PageCachedReader: whole pages fetched once, reads across pages,
// and a short page as the end of what is readable.
#include <catch2/catch.hpp>

#include <map>

#include "decoder/code_reader.h"

namespace test_page_cached_reader {  // this file's own names, apart in a unity build

namespace {

// Pages 0x1000 and 0x2000 whole, 0x3000 only 16 bytes (the mapping ends);
// byte at a is a & 0xff.
class FakePages final : public decoder::PageCachedReader {
 public:
  std::map<uint64_t, int> fetches;
  int shift = 0;  // added to every byte: the program wrote its code

 private:
  std::vector<uint8_t> fetch_page(uint64_t page) override {
    ++fetches[page];
    if (page < 0x1000 || page > 0x3000) return {};
    std::vector<uint8_t> bytes(page == 0x3000 ? 16 : kPageSize);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((page + i + shift) & 0xff);
    return bytes;
  }
};

}  // namespace

TEST_CASE("a page-cached reader fetches each page once and stops where the mapping ends", "[code_reader]") {
  FakePages pages;
  uint8_t out[64] = {};
  CHECK(pages.read(0x1ff0, out, 32) == 32);  // across two pages
  for (int i = 0; i < 32; ++i) CHECK(out[i] == ((0x1ff0 + i) & 0xff));
  CHECK(pages.read(0x1000, out, 8) == 8);
  CHECK(pages.fetches[0x1000] == 1);
  CHECK(pages.fetches[0x2000] == 1);
  CHECK(pages.read(0x2ff8, out, 64) == 8 + 16);  // 0x3000's 16 bytes, then the end
  CHECK(pages.read(0x3010, out, 4) == 0);
  CHECK(pages.read(0x500000, out, 4) == 0);
  pages.clear();
  CHECK(pages.read(0x1000, out, 8) == 8);
  CHECK(pages.fetches[0x1000] == 2);
}

TEST_CASE("a page-cached reader reads the page read last again after clear(), as it is now", "[code_reader]") {
  FakePages pages;
  uint8_t out[4] = {};
  CHECK(pages.read(0x1004, out, 4) == 4);
  CHECK(pages.read(0x2004, out, 4) == 4);
  CHECK(pages.read(0x2008, out, 4) == 4);  // the same page as before: no fetch
  CHECK(pages.fetches[0x2000] == 1);
  pages.shift = 1;
  pages.clear();
  CHECK(pages.read(0x2008, out, 4) == 4);
  CHECK(pages.fetches[0x2000] == 2);
  CHECK(out[0] == 0x09);
}

}  // namespace test_page_cached_reader
