// The copy's own snapshot of the memory the program shares
// (copy_shared_memory.h).
#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "stub/process/copy_shared_memory.h"
#include "stub/process/page_size.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/shared_memory_digest.h"

namespace stub::process::ptrace_detail {

using btstub::ErrorCode;
using btstub::Expected;
using btstub::make_error;

namespace {

// The bytes of shared mappings one copy holds a snapshot of: every
// checkpoint (one each 700 branches and at each system call) reads and
// writes them all, and holds them as its own memory. A shared mapping past
// this bound is unmapped in the copy: unknown in the past, and a re-run
// that touches it faults instead of reaching the program's present.
constexpr uint64_t kMaxSharedSnapshotBytes = 8ull << 20;
constexpr uint64_t kSnapshotChunk = 1ull << 20;

Expected<void> unmap_in_copy(pid_t copy, uint64_t begin, uint64_t end) {
  return copy_syscall(copy, SYS_munmap, {begin, end - begin}, "unmap shared memory", 0);
}

uint64_t protection(const MemoryMapping& m) {
  return PROT_READ | (m.writable ? PROT_WRITE : 0) | (m.executable ? PROT_EXEC : 0);
}

// Fills the copy's mapping at `m` with the program's bytes, chunk
// by chunk (the program is stopped: they are what it holds now), and adds
// them to `digest` as shared_memory_digest would read them. Pages that
// cannot be read (a file mapping past the file's end) are unmapped; the
// stretches kept go to `kept`.
Expected<void> fill_from_program(pid_t program, pid_t copy, const MemoryMapping& m, SharedDigest& digest,
                                 SharedRanges& kept) {
  digest.range(m.begin, m.end);
  uint64_t kept_from = m.begin;
  for (uint64_t at = m.begin; at < m.end;) {
    const uint64_t len = std::min(kSnapshotChunk, m.end - at);
    std::vector<uint8_t> bytes = read_tracee_memory(program, at, len);
    const uint64_t got = bytes.size() & ~(kPageSize - 1);
    bytes.resize(got);
    if (got > 0 && !write_tracee_memory(copy, at, bytes)) {
      return make_error(ErrorCode::MemoryFault, "Cannot write the copy's snapshot of shared memory at " + hex(at));
    }
    digest.bytes(bytes);
    if (got < len) {
      // The first unreadable page: unknown in the copy; go on after it.
      const uint64_t hole = at + got;
      digest.hole(hole);
      if (auto r = unmap_in_copy(copy, hole, hole + kPageSize); !r) return r;
      if (hole > kept_from) kept.emplace_back(kept_from, hole);
      kept_from = hole + kPageSize;
      at = hole + kPageSize;
      continue;
    }
    at += len;
  }
  if (m.end > kept_from) kept.emplace_back(kept_from, m.end);
  return {};
}

// A shared anonymous object of `size` bytes, readable and writable, where
// the copy's kernel puts it: the views are mapped from it (mremap with an
// old size of 0 maps the same pages again), then it is unmapped (the views
// hold the pages).
Expected<uint64_t> make_shared_object(pid_t copy, uint64_t size) {
  auto made = inject_syscall(copy, SYS_mmap,
                             {0, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, ~uint64_t{0}, 0});
  if (!made) return made.error();
  if (!made->signals_met.empty() || (made->result < 0 && made->result > -4096)) {
    return make_error(ErrorCode::Internal, "Cannot make shared memory of its own in the copy of the program");
  }
  return static_cast<uint64_t>(made->result);
}

Expected<void> map_view(pid_t copy, uint64_t object, uint64_t at, uint64_t begin, uint64_t end) {
  return copy_syscall(copy, SYS_mremap, {object + at, 0, end - begin, MREMAP_MAYMOVE | MREMAP_FIXED, begin},
                      "map a view of shared memory", begin);
}

// The views' own protection (each was mapped readable and writable from
// the object), then the object's first mapping goes.
Expected<void> finish_views(pid_t copy, uint64_t object, const ProcessCopy::SharedViews& views) {
  for (const auto& view : views.views) {
    if (view.prot == (PROT_READ | PROT_WRITE)) continue;
    if (auto r = copy_syscall(copy, SYS_mprotect, {view.begin, view.end - view.begin, view.prot},
                              "protect a view of shared memory", 0);
        !r) {
      return r;
    }
  }
  return copy_syscall(copy, SYS_munmap, {object, views.size}, "unmap shared memory", 0);
}

using ObjectKey = std::pair<uint64_t, uint64_t>;  // device, inode

}  // namespace

Expected<void> copy_syscall(pid_t copy, long number, std::vector<uint64_t> args, const char* what, uint64_t expect) {
  auto call = inject_syscall(copy, number, std::move(args));
  if (!call) return call.error();
  if (!call->signals_met.empty() || static_cast<uint64_t>(call->result) != expect) {
    return make_error(ErrorCode::Internal, std::string("Cannot ") + what + " in the copy of the program");
  }
  return {};
}

Expected<ProcessCopy::SharedSnapshot> privatize_shared_mappings(pid_t program, pid_t copy,
                                                                const std::vector<MemoryMapping>& maps) {
  // Which mappings are kept, by the object they map.
  uint64_t budget = kMaxSharedSnapshotBytes;
  std::vector<const MemoryMapping*> kept_maps;
  std::map<ObjectKey, std::vector<const MemoryMapping*>> by_object;
  for (const MemoryMapping& m : maps) {
    if (!m.shared) continue;
    const uint64_t len = m.end - m.begin;
    if (!m.readable || len > budget) {
      if (auto r = unmap_in_copy(copy, m.begin, m.end); !r) return r.error();
      continue;
    }
    budget -= len;
    kept_maps.push_back(&m);
    if (m.inode != 0) by_object[{m.device, m.inode}].push_back(&m);
  }
  // Views alias where their stretches of the object overlap: each run of
  // overlapping ones (by offset) is one object of the copy's, no larger
  // than they are (a file mapped at its start and a gigabyte further on
  // is two snapshots, as apart as they are in the program).
  struct Object {
    uint64_t address = 0;  // of its first mapping in the copy
    uint64_t base = 0;     // the lowest offset any view maps
    ProcessCopy::SharedViews views;
  };
  std::vector<Object> objects;
  std::map<const MemoryMapping*, std::size_t> object_of;
  for (auto& [key, views] : by_object) {
    std::sort(views.begin(), views.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (std::size_t first = 0; first < views.size();) {
      uint64_t end = views[first]->offset + (views[first]->end - views[first]->begin);
      std::size_t past = first + 1;
      for (; past < views.size() && views[past]->offset < end; ++past) {
        end = std::max(end, views[past]->offset + (views[past]->end - views[past]->begin));
      }
      if (past - first >= 2) {
        Object object;
        object.base = views[first]->offset;
        object.views.size = end - object.base;
        auto address = make_shared_object(copy, object.views.size);
        if (!address) return address.error();
        object.address = *address;
        for (std::size_t i = first; i < past; ++i) object_of[views[i]] = objects.size();
        objects.push_back(std::move(object));
      }
      first = past;
    }
  }

  ProcessCopy::SharedSnapshot snapshot;
  SharedDigest digest;
  for (const MemoryMapping* m : kept_maps) {
    // A view is filled through its own address while it is still writable
    // (the kernel forces no write into a shared read-only mapping); a
    // private one takes forced writes under any protection.
    auto found = object_of.find(m);
    Object* object = found != object_of.end() ? &objects[found->second] : nullptr;
    if (object != nullptr) {
      if (auto r = map_view(copy, object->address, m->offset - object->base, m->begin, m->end); !r) {
        return r.error();
      }
    } else if (auto r = copy_syscall(copy, SYS_mmap,
                                     {m->begin, m->end - m->begin, protection(*m),
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, ~uint64_t{0}, 0},
                                     "make shared memory private", m->begin);
               !r) {
      return r.error();
    }
    SharedRanges filled;
    if (auto r = fill_from_program(program, copy, *m, digest, filled); !r) return r.error();
    if (object != nullptr) {
      for (const auto& [begin, end] : filled) {
        object->views.views.push_back({begin, end, m->offset - object->base + (begin - m->begin), protection(*m)});
      }
    }
    snapshot.ranges.emplace_back(m->begin, m->end);
  }
  for (Object& object : objects) {
    if (auto r = finish_views(copy, object.address, object.views); !r) return r.error();
    snapshot.aliased.push_back(std::move(object.views));
  }
  snapshot.digest = digest.value();
  return snapshot;
}

Expected<void> separate_shared_views(pid_t copy, const std::vector<ProcessCopy::SharedViews>& objects) {
  for (const ProcessCopy::SharedViews& views : objects) {
    auto address = make_shared_object(copy, views.size);
    if (!address) return address.error();
    // The bytes the views show now (its parent's too, until this is done).
    for (const auto& view : views.views) {
      const std::vector<uint8_t> bytes = read_tracee_memory(copy, view.begin, view.end - view.begin);
      if (bytes.size() != view.end - view.begin || !write_tracee_memory(copy, *address + view.at, bytes)) {
        return make_error(ErrorCode::MemoryFault, "Cannot copy a view of shared memory at " + hex(view.begin));
      }
    }
    for (const auto& view : views.views) {
      if (auto r = map_view(copy, *address, view.at, view.begin, view.end); !r) return r;
    }
    if (auto r = finish_views(copy, *address, views); !r) return r;
  }
  return {};
}

}  // namespace stub::process::ptrace_detail
