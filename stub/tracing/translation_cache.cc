#include "stub/tracing/translation_cache.h"

namespace stub::tracing {

namespace {

uint64_t distance(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

void TranslationCache::add_region(uint64_t begin, uint64_t size) { regions_.push_back({begin, size, 0}); }

const TranslationCache::Region* TranslationCache::region_for(uint64_t original) const {
  for (const Region& r : regions_) {
    const bool near = distance(r.begin, original) < kReach && distance(r.begin + r.size, original) < kReach;
    if (near && r.size - r.used >= kMaxTranslationSize) return &r;
  }
  return nullptr;
}

std::optional<uint64_t> TranslationCache::place_for(uint64_t original) const {
  const Region* r = region_for(original);
  if (r == nullptr) return std::nullopt;
  return r->begin + r->used;
}

const decoder::Translation* TranslationCache::insert(decoder::Translation t) {
  const Region* found = region_for(t.address);
  if (found == nullptr || found->begin + found->used != t.cache_address || t.code.size() > kMaxTranslationSize ||
      by_original_.count(t.address) != 0) {
    return nullptr;
  }
  Region& r = regions_[static_cast<std::size_t>(found - regions_.data())];
  r.used += footprint(t.code.size());
  auto owned = std::make_unique<decoder::Translation>(std::move(t));
  const decoder::Translation* placed = owned.get();
  by_cache_[placed->cache_address] = placed;
  by_original_[placed->address] = std::move(owned);
  return placed;
}

const decoder::Translation* TranslationCache::find(uint64_t original) const {
  auto it = by_original_.find(original);
  return it == by_original_.end() ? nullptr : it->second.get();
}

const decoder::Translation* TranslationCache::holding(uint64_t cache_pc) const {
  auto it = by_cache_.upper_bound(cache_pc);
  if (it == by_cache_.begin()) return nullptr;
  const decoder::Translation* t = std::prev(it)->second;
  return cache_pc < t->cache_address + t->code.size() ? t : nullptr;
}

TranslationCache::Trap TranslationCache::trap_at(uint64_t cache_pc) const {
  // The int3 just run is in the translation holding cache_pc - 1.
  const decoder::Translation* t = holding(cache_pc - 1);
  if (t == nullptr) return {};
  const decoder::BlockExit* exit = t->exit_at(cache_pc);
  if (exit == nullptr) return {};
  return {t, exit, static_cast<std::size_t>(exit - t->exits.data())};
}

bool TranslationCache::in_regions(uint64_t pc) const {
  for (const Region& r : regions_) {
    if (pc >= r.begin && pc < r.begin + r.size) return true;
  }
  return false;
}

void TranslationCache::erase(uint64_t original) {
  auto it = by_original_.find(original);
  if (it == by_original_.end()) return;
  by_cache_.erase(it->second->cache_address);
  by_original_.erase(it);
}

void TranslationCache::clear() {
  by_cache_.clear();
  by_original_.clear();
  for (Region& r : regions_) r.used = 0;
}

void TranslationCache::forget() {
  clear();
  regions_.clear();
}

}  // namespace stub::tracing
