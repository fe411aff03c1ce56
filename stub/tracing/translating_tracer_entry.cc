// TranslatingTracer: putting a thread into the code cache, translating the
// blocks it needs and mapping the memory they live in.
#include <cpuid.h>

#include <algorithm>
#include <cstring>

#include "protocol/amd64_registers.h"
#include "stub/process/page_size.h"
#include "stub/tracing/software_tracer_internal.h"
#include "stub/tracing/translating_tracer.h"

namespace stub::tracing {

using protocol::Amd64Reg;

namespace {

// btstub's mappings keep out of the program's way: the kernel places the
// program's mmaps top-down under the libraries, and its heap grows up from
// its executable, so memory taken right beside either would move the
// program's own mappings (and its history with them). A code cache goes
// 1 GiB below the code it serves (still within a rel32's reach of it);
// logs go to a part of the address space programs leave alone: [126.5,
// 126.75) TiB, below where the kernel's top-down mmaps start even with
// ASLR (at least ~127 TiB) and inside what the sanitizers take for the
// program's memory (ASan's high memory, TSan's and MSan's top application
// range from 126.5 TiB). At 16 TiB, where they were, they lay in ASan's and
// TSan's shadow, and sanitized programs refused to start.
constexpr uint64_t kCacheAway = uint64_t{1} << 30;
constexpr uint64_t kLogsNear = uint64_t{0x7ea000000000};
constexpr uint64_t kLogsReach = uint64_t{0x2000000000};

std::vector<uint8_t> le64(uint64_t v) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
  return out;
}

}  // namespace

bool TranslatingTracer::may_enter(TracedThreadControl& control, pid_t tid, const protocol::RegisterFile& regs) const {
  const uint64_t pc = regs.get_u64(Amd64Reg::rip);
  if (live_.count(tid) == 0) return false;
  // Stopped in a system call the kernel restarts when it resumes (a thread
  // held in a futex wait): the kernel moves the pc back onto the `syscall`
  // then, which must be the program's pc, not a cache one.
  if (tracer_detail::in_restarted_call(regs)) return false;
  // A thread kept stopped now (all-stop) is seen where it stands: outside.
  if (control.stopping_all()) return false;
  // Non-stop: the client changes breakpoints while other threads run in
  // translations made before the change, which would run past them.
  if (live_threads() > 1 && control.non_stop()) return false;
  // Hardware breakpoints and watchpoints, and a user breakpoint under the
  // pc (the process layer steps off it) are the ptrace tracer's.
  if (control.hw_points_in_use() || control.has_user_breakpoint(pc)) return false;
  return ptrace_->enabled(tid);
}

bool TranslatingTracer::refresh_code(TracedThreadControl& control, pid_t tid) {
  std::vector<uint64_t> breakpoints = control.user_breakpoints();
  std::sort(breakpoints.begin(), breakpoints.end());
  bool flush = flush_pending_ || breakpoints != breakpoints_ || code_written_;
  code_written_ = false;
  if (code_stale_ || !code_) {
    TranslatableCode now = TranslatableCode::read(tid);
    if (code_ && now.source() != code_->source()) {
      // Code mapped beside the old changes none of it (a library loaded):
      // the translations stay, and only the refusals go (code outside every
      // region may be in one now). A region gone or changed drops them all.
      if (now.keeps(*code_)) {
        refused_.clear();
      } else {
        flush = true;
      }
    }
    code_ = std::move(now);
    code_stale_ = false;
  }
  breakpoints_ = std::move(breakpoints);
  if (!flush || (cache_.size() == 0 && refused_.empty())) {
    flush_pending_ = false;
    return true;
  }
  if (others_in_cache(tid)) {
    // They run translations of the old code (or without the new
    // breakpoints) until their next exit, which hands them back.
    flush_pending_ = true;
    return false;
  }
  this->flush(control);
  flush_pending_ = false;
  return true;
}

void TranslatingTracer::flush(TracedThreadControl& control) {
  // No thread is in the cache (refresh_code), so nothing runs what is
  // dropped.
  cache_.clear();
  refused_.clear();
  pending_links_.clear();
  for (auto& [tid, th] : threads_) {
    for (uint64_t offset : th.table_entries) {
      (void)write_table(control, th.area, th.others, offset, decoder::empty_indirect_entry(offset));
    }
    th.table_entries.clear();
  }
  ++stats_.flushes;
}

void TranslatingTracer::enter_indirect(TracedThreadControl& control, Thread& th, uint64_t original,
                                       const decoder::Translation& t) {
  const uint64_t offset = decoder::indirect_entry_offset(original);
  std::vector<uint8_t> entry = le64(-original);
  const std::vector<uint8_t> to = le64(t.cache_address);
  entry.insert(entry.end(), to.begin(), to.end());
  // Noted even where a write failed: one area may hold it (the next
  // flush clears them all).
  (void)write_table(control, th.area, th.others, offset, entry);
  th.table_entries.insert(offset);
}

const decoder::Translation* TranslatingTracer::translation_for(TracedThreadControl& control, pid_t tid,
                                                               uint64_t pc) {
  if (const decoder::Translation* t = cache_.find(pc)) return t;
  if (refused_.count(pc) != 0) return nullptr;
  auto refuse = [&](std::string why) -> const decoder::Translation* {
    // "cannot translate the instruction at 0x...: REASON" counts as REASON.
    std::string reason = why;
    if (reason.rfind("cannot translate the instruction at ", 0) == 0) {
      if (auto colon = reason.find(": "); colon != std::string::npos) reason.erase(0, colon + 2);
    }
    Refusals& r = refusals_[reason];
    if (r.blocks++ == 0) r.example = pc;
    refused_.emplace(pc, std::move(reason));
    ++stats_.untranslatable;
    last_refusal_ = std::move(why);
    return nullptr;
  };
  const CodeRegion* region = code_ ? code_->region_of(pc) : nullptr;
  if (region == nullptr) return refuse("code outside the program's unwritable file mappings");
  auto place = cache_.place_for(pc);
  if (!place) {
    const uint64_t aim = pc > 2 * kCacheAway ? pc - kCacheAway : pc + kCacheAway;
    auto mapped = control.map_program_memory(tid, aim, TranslationCache::kReach - kCacheAway,
                                             TranslationCache::kRegionSize, true);
    if (!mapped) return refuse("no code cache near it: " + mapped.error().message);
    cache_.add_region(*mapped);
    place = cache_.place_for(pc);
    if (!place) return refuse("the code cache mapped for it is out of reach");
  }
  auto bytes = control.read_memory(pc, std::min<uint64_t>(kBlockBytes, region->end - pc));
  if (!bytes || bytes->empty()) return refuse("its code cannot be read");
  auto translated = decoder::translate_block(pc, *bytes, *place, translate_options());
  if (!translated) return refuse(translated.error().message);
  if (translated->code.size() > TranslationCache::kMaxTranslationSize) return refuse("its translation is too long");
  if (auto written = control.write_tracer_memory(*place, translated->code); !written) {
    return refuse("the code cache cannot be written: " + written.error().message);
  }
  ++stats_.translations;
  const decoder::Translation* placed = cache_.insert(std::move(*translated));
  return placed != nullptr ? placed : refuse("the code cache did not take it");
}

const decoder::Translation* TranslatingTracer::translation_and_ahead(TracedThreadControl& control, pid_t tid,
                                                                     uint64_t pc) {
  const bool known = cache_.find(pc) != nullptr;
  const decoder::Translation* t = translation_for(control, tid, pc);
  if (t != nullptr && !known) translate_ahead(control, thread(tid), *t);
  return t;
}

decoder::LogStores TranslatingTracer::log_stores_for_this_cpu() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  constexpr unsigned kPrefetchwBit = 1u << 8;  // cpuid 0x80000001 ecx: PREFETCHW (3DNowPrefetch)
  const bool prefetchw = __get_cpuid(0x80000001, &a, &b, &c, &d) != 0 && (c & kPrefetchwBit) != 0;
  return prefetchw ? decoder::LogStores::CachedPrefetched : decoder::LogStores::NonTemporal;
}

decoder::TranslateOptions TranslatingTracer::translate_options() const {
  decoder::TranslateOptions options;
  options.syscalls_exit = true;  // the ptrace tracer checkpoints there
  options.log_stores = log_stores_;
  options.stop_before = [this](uint64_t a) { return std::binary_search(breakpoints_.begin(), breakpoints_.end(), a); };
  return options;
}

std::optional<TranslatingTracer::Area> TranslatingTracer::map_area(TracedThreadControl& control, pid_t tid,
                                                                   bool shared_only) {
  // Shared, the log is drained in place; where the program cannot make
  // a memfd (a seccomp filter, no /proc), read through the process layer.
  Area area;
  uint64_t mapped = 0;
  if (auto both = control.map_shared_program_memory(tid, kLogsNear, kLogsReach, kAreaBytes)) {
    mapped = both->program_address();
    area.shared = std::make_shared<process::SharedMapping>(std::move(*both));
  } else if (shared_only) {
    return std::nullopt;
  } else if (auto alone = control.map_program_memory(tid, kLogsNear, kLogsReach, kAreaBytes, false)) {
    mapped = *alone;
  } else {
    return std::nullopt;
  }
  area.base = mapped + kAreaLogBytes;
  return area;
}

bool TranslatingTracer::ensure_area(TracedThreadControl& control, pid_t tid) {
  if (threads_[tid].area.base != 0) return true;
  // Mapped zero: every entry empty but entry 0 (decoder::empty_indirect_entry).
  const uint64_t zero_entry = decoder::indirect_entry_offset(0);
  FreeArea free;
  if (!free_areas_.empty()) {
    // An ended thread's: its table entries lead into the cache as it was
    // then, and are not this thread's.
    free = std::move(free_areas_.back());
    free_areas_.pop_back();
    for (auto entry = free.table_entries.begin(); entry != free.table_entries.end();) {
      const uint64_t offset = *entry;
      if (!write_table(control, free.area, free.others, offset, decoder::empty_indirect_entry(offset))) {
        free_areas_.push_back(std::move(free));  // the entries left are cleared at the next try
        return false;
      }
      entry = free.table_entries.erase(entry);
    }
  } else {
    std::optional<Area> mapped = map_area(control, tid, false);
    if (!mapped) return false;
    free.area = std::move(*mapped);
    if (!write_area(control, free.area.shared.get(), free.area.base + zero_entry,
                    decoder::empty_indirect_entry(zero_entry))) {
      // Mapped in the program all the same: the next thread's, which
      // writes the entry again.
      free.table_entries.insert(zero_entry);
      free_areas_.push_back(std::move(free));
      return false;
    }
  }
  // The other logs, where their chunks can be encoded on a spare CPU
  // while the program runs (else the first serves alone, as before).
  while (free.area.shared && free.others.size() < kSpareAreas && !ptrace_->packer_placement().cpus.empty()) {
    std::optional<Area> other = map_area(control, tid, true);
    if (!other ||
        !write_area(control, other->shared.get(), other->base + zero_entry, decoder::empty_indirect_entry(zero_entry))) {
      break;
    }
    free.others.push_back(std::move(*other));
  }
  // The mmap's waits may have seen the thread end (a SIGKILL meanwhile):
  // the area, mapped in the program, serves the next thread.
  Thread* th = thread(tid);
  if (th == nullptr) {
    free_areas_.push_back(std::move(free));
    return false;
  }
  th->area = std::move(free.area);
  th->others = std::move(free.others);
  th->log_capacity = kLogCapacity;
  if (const Checkpoints* checkpoints = ptrace_->checkpoints(); checkpoints && ptrace_->all_enabled()) {
    th->log_capacity = std::clamp<uint64_t>(checkpoints->limits().every_branches, 1, kLogCapacity);
  }
  return reset_cursor(control, tid, *th);
}

std::size_t TranslatingTracer::mapped_areas() const {
  std::size_t areas = free_areas_.size();
  for (const auto& [tid, th] : threads_) areas += th.area.base != 0 ? 1 : 0;
  return areas;
}

bool TranslatingTracer::reset_cursor(TracedThreadControl& control, pid_t tid, Thread& th) {
  th.log_fill = std::min(th.log_capacity, th.filled_log ? log_records_for(mapped_areas()) : kMinLogRecords);
  if (const auto room = ptrace_->room_for_lent(tid)) th.log_fill = std::min<uint64_t>(th.log_fill, *room);
  return write_area(control, th.area.shared.get(), th.area.base + decoder::kSlotLogCursor,
                    le64(static_cast<uint64_t>(empty_cursor(th))));
}

bool TranslatingTracer::populate_area(TracedThreadControl& control, pid_t tid) {
  const Thread* th = thread(tid);
  if (th == nullptr) return false;
  const Area& area = th->area;
  // Only a shared area: a private one is the fallback where the program
  // runs under seccomp, whose filter may kill it at a call it does not list.
  if (populate_refused_ || !area.shared || !th->filled_log || th->log_fill == 0 || control.stopping_all()) return true;
  const uint64_t want = (area.base - th->log_fill * decoder::kLogRecordSize) / kPageSize * kPageSize;
  if (area.populated_from != 0 && want >= area.populated_from) return true;
  const uint64_t end = area.populated_from != 0 ? area.populated_from : area.base - kAreaLogBytes + kAreaBytes;
  const auto populated = control.populate_program_memory(tid, want, end - want);
  Thread* still = thread(tid);
  if (still == nullptr) return false;
  if (!populated) {
    populate_refused_ = true;
    return true;
  }
  still->area.populated_from = want;
  return true;
}

bool TranslatingTracer::write_area(TracedThreadControl& control, const process::SharedMapping* shared,
                                   uint64_t address, const std::vector<uint8_t>& bytes) {
  if (shared == nullptr) return control.write_tracer_memory(address, bytes).ok();
  uint8_t* at = shared->at(address, bytes.size());
  if (at == nullptr) return false;
  std::memcpy(at, bytes.data(), bytes.size());
  return true;
}

bool TranslatingTracer::write_table(TracedThreadControl& control, const Area& area, const std::vector<Area>& others,
                                    uint64_t offset, const std::vector<uint8_t>& bytes) {
  bool all = write_area(control, area.shared.get(), area.base + offset, bytes);
  for (const Area& other : others) all = write_area(control, other.shared.get(), other.base + offset, bytes) && all;
  return all;
}

void TranslatingTracer::apply_links(TracedThreadControl& control) {
  for (const auto& [address, rel32] : pending_links_) {
    if (control.write_tracer_memory(address, rel32)) ++stats_.links;
  }
  pending_links_.clear();
}

bool TranslatingTracer::enter(TracedThreadControl& control, pid_t tid, uint64_t pc) {
  if (!refresh_code(control, tid)) return false;
  if (!others_in_cache(tid)) apply_links(control);
  const decoder::Translation* t = translation_and_ahead(control, tid, pc);
  if (t == nullptr || flush_pending_ || !ensure_area(control, tid)) return false;
  auto regs = control.read_general_registers(tid);
  if (!regs || !ptrace_->lend_thread(control, tid)) return false;
  // Lending may take a checkpoint, whose waits may see the thread end (a
  // SIGKILL meanwhile): its Thread is gone with it then.
  Thread* lent = thread(tid);
  if (lent == nullptr) return false;
  Thread& th = *lent;
  // Under --trace-full=stop the branches stored outside took some of the
  // room the log's fill was judged against: judged again, where the log is
  // empty (a rare way out leaves it unread, for the next drain).
  if (ptrace_->room_for_lent(tid)) {
    Slots slots;
    if (!read_slots(control, th, slots)) {
      (void)ptrace_->take_back(control, tid);
      return false;
    }
    if (slots.cursor == empty_cursor(th) && !reset_cursor(control, tid, th)) {
      (void)ptrace_->take_back(control, tid);
      return false;
    }
  }
  th.program_gs = regs->get_u64(Amd64Reg::gs_base);
  if (!populate_area(control, tid)) return false;
  protocol::RegisterFile in;
  in.set_u64(Amd64Reg::rip, t->cache_address);
  in.set_u64(Amd64Reg::gs_base, th.area.base);
  if (!control.write_registers(tid, in)) {
    (void)ptrace_->take_back(control, tid);  // re-arms its trace stop
    return false;
  }
  th.in_cache = true;
  th.repair_steps = 0;
  ++stats_.entries;
  return true;
}

}  // namespace stub::tracing
