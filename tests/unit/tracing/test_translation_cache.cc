// The translating tracer's account of its code cache: where translations
// go, and which translation and exit a stopped thread's pc is in.
#include <catch2/catch.hpp>

#include <vector>

#include "stub/tracing/translation_cache.h"

namespace test_translation_cache {  // this file's own names, apart in a unity build

using decoder::ExitKind;
using decoder::Translation;
using stub::tracing::TranslationCache;

namespace {

constexpr uint64_t kCode = 0x555555554000;

// A block of `original` translated by the real translator: a mov and a
// jmp back to itself (a direct exit), at `cache`.
Translation translated(uint64_t original, uint64_t cache) {
  const std::vector<uint8_t> code = {0x48, 0x89, 0xc3, 0xeb, 0xfb};  // mov %rax,%rbx; jmp original
  auto t = decoder::translate_block(original, code, cache);
  REQUIRE(t);
  return std::move(*t);
}

}  // namespace

TEST_CASE("translations go one after another into a region within reach", "[translation_cache]") {
  TranslationCache cache;
  CHECK_FALSE(cache.place_for(kCode));  // no region yet: one must be mapped
  const uint64_t region = kCode + (uint64_t{1} << 30);
  cache.add_region(region);
  // Too far for code 2 GiB below the region.
  CHECK_FALSE(cache.place_for(region - (uint64_t{2} << 30)));
  auto first = cache.place_for(kCode);
  REQUIRE(first);
  CHECK(*first == region);
  const Translation* a = cache.insert(translated(kCode, *first));
  REQUIRE(a != nullptr);
  auto second = cache.place_for(kCode + 0x40);
  REQUIRE(second);
  // On 16 bytes, with a gap after the first's last byte.
  CHECK(*second % 16 == 0);
  CHECK(*second > a->cache_address + a->code.size());
  // Not where place_for said: refused.
  CHECK(cache.insert(translated(kCode + 0x40, *second + 16)) == nullptr);
  const Translation* b = cache.insert(translated(kCode + 0x40, *second));
  REQUIRE(b != nullptr);
  // One translation per original address.
  CHECK(cache.insert(translated(kCode + 0x40, *cache.place_for(kCode))) == nullptr);
  CHECK(cache.find(kCode) == a);
  CHECK(cache.find(kCode + 0x40) == b);
  CHECK(cache.find(kCode + 1) == nullptr);
  CHECK(cache.size() == 2);
}

TEST_CASE("a cache pc names its translation, a trap pc its exit", "[translation_cache]") {
  TranslationCache cache;
  const uint64_t region = kCode + (uint64_t{1} << 28);
  cache.add_region(region);
  const Translation* a = cache.insert(translated(kCode, *cache.place_for(kCode)));
  const Translation* b = cache.insert(translated(kCode + 0x100, *cache.place_for(kCode)));
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(cache.holding(a->cache_address) == a);
  CHECK(cache.holding(a->cache_address + a->code.size() - 1) == a);
  CHECK(cache.holding(a->cache_address + a->code.size()) == nullptr);  // the gap
  CHECK(cache.holding(b->cache_address) == b);
  CHECK(cache.holding(region - 1) == nullptr);
  CHECK(cache.in_regions(region));
  CHECK_FALSE(cache.in_regions(region + TranslationCache::kRegionSize));
  for (std::size_t i = 0; i < b->exits.size(); ++i) {
    const uint64_t trap_pc = b->cache_address + b->exits[i].trap_offset;
    const TranslationCache::Trap trap = cache.trap_at(trap_pc);
    CHECK(trap.translation == b);
    CHECK(trap.exit == &b->exits[i]);
    CHECK(trap.exit_index == i);
    // One byte on, no exit (nor is a translation's start a trap).
    CHECK(cache.trap_at(trap_pc + 1).exit == nullptr);
  }
  CHECK(cache.trap_at(b->cache_address).exit == nullptr);
  // The jmp back to itself: a direct exit to the block's own start.
  bool direct = false;
  for (const auto& exit : a->exits) direct = direct || (exit.kind == ExitKind::Direct && exit.target == kCode);
  CHECK(direct);
  // The original pc of a's first cache byte is the mov's.
  CHECK(a->original_pc(cache.holding(a->cache_address)->cache_address) == kCode);
}

TEST_CASE("clearing drops translations and keeps regions; forgetting drops both", "[translation_cache]") {
  TranslationCache cache;
  const uint64_t region = kCode + (uint64_t{1} << 28);
  cache.add_region(region);
  REQUIRE(cache.insert(translated(kCode, *cache.place_for(kCode))) != nullptr);
  cache.clear();
  CHECK(cache.size() == 0);
  CHECK(cache.find(kCode) == nullptr);
  CHECK(cache.holding(region) == nullptr);
  REQUIRE(cache.place_for(kCode));
  CHECK(*cache.place_for(kCode) == region);  // from the start again
  cache.forget();
  CHECK_FALSE(cache.place_for(kCode));
  CHECK_FALSE(cache.in_regions(region));
}

TEST_CASE("a full region sends translations to the next", "[translation_cache]") {
  TranslationCache cache;
  const uint64_t small = kCode + (uint64_t{1} << 28);
  cache.add_region(small, TranslationCache::kMaxTranslationSize + 64);
  cache.add_region(small + (uint64_t{1} << 24));
  REQUIRE(cache.insert(translated(kCode, *cache.place_for(kCode))) != nullptr);
  auto next = cache.place_for(kCode + 0x40);
  REQUIRE(next);
  CHECK(*next == small + (uint64_t{1} << 24));
}

}  // namespace test_translation_cache
