// Running a copy to the n-th visit of a pc with the count kept by the copy
// (decoder/counting_patch.h): one stop for the whole run where a breakpoint
// stops at every visit (~35 µs each): a first reverse step into a hot loop
// re-runs up to a checkpoint's worth of visits (100,000 branches under the
// translating tracer).
//
// The page for the count is the copy's own: mapped near the pc (a jmp
// reaches 2 GiB) by an injected mmap before the run and unmapped after it,
// so that a later read of the copy's memory finds what the program had.
#include <sys/mman.h>
#include <sys/syscall.h>

#include "decoder/counting_patch.h"
#include "stub/process/proc_maps.h"
#include "stub/process/process_copy.h"
#include "stub/process/ptrace_internal.h"

namespace stub::process {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

namespace {

// What a rel32 from anywhere in the page reaches, with room to spare.
constexpr uint64_t kPageReach = (uint64_t{1} << 31) - 4 * decoder::kCountingPageSize;

}  // namespace

Expected<bool> ProcessCopy::map_counting_page(uint64_t page) {
  const uint64_t size = decoder::kCountingPageSize;
  auto mapped = inject_syscall(pid_, SYS_mmap,
                               {page, size, PROT_READ | PROT_WRITE | PROT_EXEC,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, ~uint64_t{0}, 0});
  if (!mapped) return mapped.error();
  if (!mapped->signals_met.empty()) return make_error(ErrorCode::Internal, "The copy got a signal");
  if (mapped->result < 0) return false;  // taken meanwhile, or no executable anonymous memory here
  if (static_cast<uint64_t>(mapped->result) != page) {  // a kernel that took the address as a hint
    if (auto undone = unmap_counting_page(static_cast<uint64_t>(mapped->result)); !undone) return undone.error();
    return false;
  }
  return true;
}

Expected<void> ProcessCopy::unmap_counting_page(uint64_t page) {
  auto unmapped = inject_syscall(pid_, SYS_munmap, {page, decoder::kCountingPageSize});
  if (!unmapped) return unmapped.error();
  if (unmapped->result != 0 || !unmapped->signals_met.empty()) {
    return make_error(ErrorCode::Internal, "Cannot unmap the copy's counting page");
  }
  return {};
}

Expected<std::optional<decoder::CountingPatch>> ProcessCopy::counting_patch(uint64_t target, uint64_t hits,
                                                                            const EntryCheck& enters) {
  if (!usable_) return make_error(ErrorCode::Internal, "The copy is unusable");
  if (auto ready = ready_to_run(); !ready) return ready.error();
  auto code = read_memory(target, decoder::kCountingCodeBytes);
  if (!code) return std::optional<decoder::CountingPatch>();
  auto page = free_page_near(read_maps(pid_), target, kPageReach, decoder::kCountingPageSize);
  if (!page) return std::optional<decoder::CountingPatch>();
  auto patch = decoder::build_counting_patch(target, *code, *page, hits);
  if (!patch || enters(target + 1, target + patch->patch.size())) return std::optional<decoder::CountingPatch>();
  return std::optional<decoder::CountingPatch>(std::move(*patch));
}

Expected<bool> ProcessCopy::counts_at(uint64_t pc, const EntryCheck& enters) {
  auto patch = counting_patch(pc, 1, enters);
  if (!patch) return patch.error();
  return patch->has_value();
}

Expected<std::optional<uint64_t>> ProcessCopy::run_by_counting(uint64_t target, uint64_t hits,
                                                               const EntryCheck& enters) {
  auto patch = counting_patch(target, hits, enters);
  if (!patch) return patch.error();
  if (!*patch) return std::optional<uint64_t>();
  const uint64_t page = (*patch)->page_address;
  auto mapped = map_counting_page(page);
  if (!mapped) {
    usable_ = false;
    return mapped.error();
  }
  if (!*mapped) return std::optional<uint64_t>();
  auto fail = [&](btstub::Error error) -> Expected<std::optional<uint64_t>> {
    usable_ = false;
    return error;
  };
  // Standing inside the bytes the jmp will cover (a checkpoint taken there),
  // the copy first goes to its first visit of the target by breakpoint,
  // which it then stands at and counts as the first.
  auto at = pc();
  if (!at) return fail(at.error());
  uint64_t watch_hits = 0;
  if (*at > target && *at < target + (*patch)->patch.size()) {
    auto first = run_to_counting(target, 1);
    if (!first) return fail(first.error());
    watch_hits += *first;
  }
  if (!write_memory(page, (*patch)->page) || !write_memory(target, (*patch)->patch)) {
    (void)write_memory(target, (*patch)->original);
    return fail(make_error(ErrorCode::MemoryFault, "Cannot write the copy's counting trampoline"));
  }
  // An armed watch stops the copy after each instruction that touches it
  // (in the program's code or moved into the page): counted, and on.
  auto stop = resume_and_wait(false);
  while (stop && !stop->watch_hits.empty()) {
    watch_hits += stop->watch_hits.size();
    stop = resume_and_wait(false);
  }
  const bool restored = write_memory(target, (*patch)->original);
  if (!stop) return fail(stop.error());
  if (!restored) return fail(make_error(ErrorCode::MemoryFault, "Cannot restore the copy's code at " + hex(target)));
  at = pc();
  if (!at) return fail(at.error());
  if (*at != (*patch)->stop_pc) {
    return fail(make_error(ErrorCode::Internal,
                           "The copy stopped at " + hex(*at) + " on its way to " + hex(target)));
  }
  if (auto moved = set_pc(target); !moved) return fail(moved.error());
  if (auto unmapped = unmap_counting_page(page); !unmapped) return fail(unmapped.error());
  return std::optional<uint64_t>(watch_hits);
}

}  // namespace stub::process
