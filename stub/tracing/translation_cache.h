#pragma once
// The translating tracer's code cache, as btstub keeps account of it: the
// regions it mapped into the program, the translations placed in them
// (decoder/block_translator.h) and the lookups a stop needs (which
// translation a cache pc is in, which exit a trap pc is). No OS calls:
// the tracer maps the regions and writes the code.
//
// A region serves code within a rel32's reach of it (a translation's
// RIP-relative operands and links must reach), so a program with code far
// apart (its executable, its libraries) gets a region near each.
// Translations are placed one after another, each starting on 16 bytes;
// dropping them all (clear) keeps the regions for the next ones.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "decoder/block_translator.h"

namespace stub::tracing {

class TranslationCache {
 public:
  // Bytes a region holds, and the most one translation may take.
  static constexpr uint64_t kRegionSize = uint64_t{4} << 20;
  static constexpr uint64_t kMaxTranslationSize = 16 * 1024;
  // How far from code a region may be: a rel32 from anywhere in the region
  // to anywhere in a block (kMaxTranslationSize of slack each way).
  static constexpr uint64_t kReach = (uint64_t{1} << 31) - kRegionSize - 2 * kMaxTranslationSize;

  void add_region(uint64_t begin, uint64_t size = kRegionSize);
  // Where the next translation of the code at `original` would go: in a
  // region within reach with room for the largest translation; nullopt
  // when a region must be mapped near it first.
  std::optional<uint64_t> place_for(uint64_t original) const;
  // The room a translation of `code_size` bytes takes: on 16 bytes, and
  // never flush against the next (a trap pc just past a final int3 must
  // not be the next one's start).
  static uint64_t footprint(std::size_t code_size) { return (code_size + 16) & ~uint64_t{15}; }
  // Takes `t`, translated to run at place_for(t.address). nullptr (nothing
  // taken) when it is not there or does not fit.
  const decoder::Translation* insert(decoder::Translation t);

  // The translation of the code at `original`, or nullptr.
  const decoder::Translation* find(uint64_t original) const;
  // The translation whose code holds `cache_pc`, or nullptr.
  const decoder::Translation* holding(uint64_t cache_pc) const;
  // The translation and exit whose trap leaves the pc at `cache_pc` (just
  // past an int3), or {nullptr, nullptr}.
  struct Trap {
    const decoder::Translation* translation = nullptr;
    const decoder::BlockExit* exit = nullptr;
    std::size_t exit_index = 0;
  };
  Trap trap_at(uint64_t cache_pc) const;
  // Whether `pc` lies in one of the regions.
  bool in_regions(uint64_t pc) const;

  std::size_t size() const { return by_original_.size(); }
  // Forgets the translation of `original` (its code could not be written);
  // its space is not used again before clear().
  void erase(uint64_t original);
  // Drops every translation; the regions stay, empty.
  void clear();
  // Drops the regions too (a new address space).
  void forget();

 private:
  struct Region {
    uint64_t begin = 0;
    uint64_t size = 0;
    uint64_t used = 0;
  };
  const Region* region_for(uint64_t original) const;

  std::vector<Region> regions_;
  // Translations by original address; their cache addresses index them too.
  std::map<uint64_t, std::unique_ptr<decoder::Translation>> by_original_;
  std::map<uint64_t, const decoder::Translation*> by_cache_;
};

}  // namespace stub::tracing
