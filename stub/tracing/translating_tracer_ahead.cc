// TranslatingTracer: translating ahead of the program.
//
// Nearly every direct exit from the cache is a first visit: the target is
// translated, the exit linked and the thread put back, a ptrace stop and a
// dozen system calls each (about as many exits as blocks translated in
// every program measured, docs/performance.md). The blocks a new block
// leads to (both sides of a test, a callee, the code a jmp goes on with,
// the code a call returns to) mostly run soon after it, so they are
// translated at once, breadth first, up to kAheadBlocks: their code read a
// page at a time and written in one piece per run of the cache, with every
// exit among them already linked and the return sites in the thread's
// indirect table, in the stop that made the first.
//
// So is the target a jmp/call through a RIP-relative slot reads (a PLT
// stub's GOT entry, `call *f@GOTPCREL(%rip)`, a function pointer in the
// program's data): what the slot holds now, entered in the table too.
// Only a guess: the table is looked up with the target the program does
// read, so a slot changed since costs a translation never used.
//
// Only the new blocks' own code is written, so nothing any thread may be
// running changes (old blocks that lead to new ones are linked at their
// first exit, as before). A block never reached costs its translation and
// its room in the cache; one that cannot be translated is left alone here
// and refused, and counted, when a thread does go there.
#include <algorithm>
#include <cstring>
#include <deque>
#include <set>

#include "decoder/code_reader.h"
#include "stub/tracing/translating_tracer.h"

namespace stub::tracing {

namespace {

constexpr std::size_t kAheadBlocks = 128;
// Targets looked at per pass, most of them known already in a warm cache.
constexpr std::size_t kAheadLooks = 512;
constexpr uint8_t kInt3 = 0xcc;

// The program's code read a page at a time, each page once per pass.
class CodePages final : public decoder::PageCachedReader {
 public:
  explicit CodePages(TracedThreadControl& control) : control_(control) {}

  // The bytes of [pc, end) that can be read, from pc on.
  std::vector<uint8_t> read_range(uint64_t pc, uint64_t end) {
    std::vector<uint8_t> out(static_cast<std::size_t>(end - pc));
    out.resize(read(pc, out.data(), out.size()));
    return out;
  }

 private:
  std::vector<uint8_t> fetch_page(uint64_t page) override {
    auto bytes = control_.read_memory(page, kPageSize);
    return bytes ? std::move(*bytes) : std::vector<uint8_t>{};
  }

  TracedThreadControl& control_;
};

}  // namespace

void TranslatingTracer::translate_ahead(TracedThreadControl& control, Thread* th, const decoder::Translation& from) {
  if (!code_) return;
  CodePages pages(control);
  const decoder::TranslateOptions options = translate_options();
  std::vector<const decoder::Translation*> made;
  std::deque<uint64_t> todo;
  std::vector<uint64_t> slot_targets;
  auto follow = [&](const decoder::Translation& t) {
    for (const decoder::BlockExit& exit : t.exits) {
      if (exit.kind == decoder::ExitKind::Direct && exit.target != 0) todo.push_back(exit.target);
    }
    if (t.return_site != 0) todo.push_back(t.return_site);
    uint64_t target = 0;
    if (t.target_slot != 0 && pages.read(t.target_slot, reinterpret_cast<uint8_t*>(&target), sizeof target) ==
                                  sizeof target && target != 0) {
      todo.push_back(target);
      slot_targets.push_back(target);
    }
  };
  follow(from);
  std::set<uint64_t> looked;
  while (!todo.empty() && made.size() < kAheadBlocks && looked.size() < kAheadLooks) {
    const uint64_t pc = todo.front();
    todo.pop_front();
    if (!looked.insert(pc).second || cache_.find(pc) != nullptr || refused_.count(pc) != 0) continue;
    const CodeRegion* region = code_->region_of(pc);
    auto place = cache_.place_for(pc);  // no region is mapped for code not yet reached
    if (region == nullptr || !place) continue;
    const std::vector<uint8_t> bytes = pages.read_range(pc, std::min<uint64_t>(pc + kBlockBytes, region->end));
    if (bytes.empty()) continue;
    auto translated = decoder::translate_block(pc, bytes, *place, options);
    if (!translated || translated->code.size() > TranslationCache::kMaxTranslationSize) continue;
    const decoder::Translation* t = cache_.insert(std::move(*translated));
    if (t == nullptr) continue;
    made.push_back(t);
    follow(*t);
  }

  // Each exit to a translation jumps straight there (patched into `code`,
  // the bytes from `code_at` on); how many were.
  auto link_into = [&](const decoder::Translation& t, std::vector<uint8_t>& code, uint64_t code_at) {
    uint64_t links = 0;
    for (std::size_t i = 0; i < t.exits.size(); ++i) {
      const decoder::BlockExit& exit = t.exits[i];
      if (exit.kind != decoder::ExitKind::Direct || exit.target == 0) continue;
      const decoder::Translation* to = cache_.find(exit.target);
      if (to == nullptr) continue;
      auto patch = decoder::link_exit(t, i, to->cache_address);
      if (!patch || patch->address < code_at || patch->address + patch->bytes.size() > code_at + code.size()) continue;
      std::memcpy(code.data() + (patch->address - code_at), patch->bytes.data(), patch->bytes.size());
      ++links;
    }
    return links;
  };
  // The new blocks in runs placed one after another (the cache places them
  // so within a region), each run one write. Should one fail (the program
  // gone, or our region unmapped under it) every new block is forgotten:
  // none is reachable yet, but the runs written may lead into it; and the
  // cache is dropped once every thread is out of it.
  uint64_t linked = 0;
  std::size_t first = 0;
  while (first < made.size()) {
    std::size_t last = first + 1;
    while (last < made.size() && made[last]->cache_address ==
                                      made[last - 1]->cache_address + TranslationCache::footprint(made[last - 1]->code.size())) {
      ++last;
    }
    const uint64_t run_at = made[first]->cache_address;
    std::vector<uint8_t> run(made[last - 1]->cache_address + made[last - 1]->code.size() - run_at, kInt3);
    for (std::size_t i = first; i < last; ++i) {
      const decoder::Translation& t = *made[i];
      std::vector<uint8_t> code = t.code;
      linked += link_into(t, code, t.cache_address);
      std::copy(code.begin(), code.end(), run.begin() + static_cast<std::ptrdiff_t>(t.cache_address - run_at));
    }
    if (!control.write_tracer_memory(run_at, run)) {
      for (const decoder::Translation* t : made) cache_.erase(t->address);
      flush_pending_ = true;
      return;
    }
    first = last;
  }
  stats_.translations += made.size();
  stats_.ahead += made.size();
  // `from` is new too: no thread has run it and nothing leads to it yet,
  // so it is written again whole, linked.
  std::vector<uint8_t> code = from.code;
  if (const uint64_t links = link_into(from, code, from.cache_address); links != 0) {
    if (control.write_tracer_memory(from.cache_address, code)) linked += links;
  }
  stats_.ahead_links += linked;
  stats_.links += linked;
  // The calls' return sites and the slots' targets in the thread's
  // indirect table: its returns and jumps there go straight on instead of
  // exiting once each.
  if (th == nullptr || th->area.base == 0) return;
  auto enter = [&](uint64_t original, uint64_t& counter) {
    const decoder::Translation* to = original != 0 ? cache_.find(original) : nullptr;
    if (to == nullptr || th->table_entries.count(decoder::indirect_entry_offset(original)) != 0) return;
    enter_indirect(control, *th, original, *to);
    ++counter;
  };
  enter(from.return_site, stats_.ahead_entries);
  for (const decoder::Translation* t : made) enter(t->return_site, stats_.ahead_entries);
  for (uint64_t target : slot_targets) enter(target, stats_.slot_entries);
}

}  // namespace stub::tracing
