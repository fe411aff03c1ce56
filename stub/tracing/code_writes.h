#pragma once
// System calls that can change code the translating tracer copied into its
// cache without changing /proc/PID/maps text: a write to /proc/PID/mem
// (stores through the page protection, the line stays r-x), a write to
// the mapped file itself, process_vm_writev, and an mprotect / mmap
// MAP_FIXED / munmap / mremap / madvise over translated code that is
// undone before the tracer reads the maps again (made writable, stored
// to, made executable: the same line as before). The ptrace tracer steps
// every system call; at the stop after the step the kernel still holds
// the call's number (orig_rax) and its arguments, and the translating
// tracer judges them there.
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/register_file.h"
#include "stub/tracing/translatable_code.h"

namespace stub::tracing {

struct SystemCall {
  int64_t number = -1;             // orig_rax; negative: no system call
  std::array<uint64_t, 6> args{};  // rdi, rsi, rdx, r10, r8, r9
};

struct CodeWrite {
  enum class Kind { None, Range, Descriptor, Anything };
  Kind kind = Kind::None;
  uint64_t begin = 0;  // Range: [begin, end)
  uint64_t end = 0;
  int fd = -1;         // Descriptor: the file written
  // Descriptor, after code_write_in: the file `fd` named at the stop right
  // after the call; nullopt when it could not be read (closed meanwhile).
  std::optional<std::string> file;
};

// The call a thread just made, from its registers at the stop after it
// (number -1 at a stop that follows no system call).
SystemCall system_call_of(const protocol::RegisterFile& regs);

// What the call may have changed, from its number and arguments alone.
CodeWrite code_write_of(const SystemCall& call);

// The same with a descriptor's file resolved once, through /proc/TID/fd of
// the thread that made the call (still open at the stop right after it).
CodeWrite code_write_in(pid_t tid, const SystemCall& call);

// Whether a resolved write went to a process's memory file (/proc/PID/mem,
// /proc/PID/task/TID/mem) or to a descriptor that could not be resolved.
bool writes_process_memory(const CodeWrite& write);

// Whether a resolved write changed code that `code` holds: a range over it,
// a process's memory file, one of its files, or anything unresolvable.
bool changes_code(const CodeWrite& write, const TranslatableCode& code);

// Whether the call may have made code a plain store changes, or code that
// may change at all (translatable_code.h writable_code, changeable_code):
// mapped executable memory or a file shared and writable, made memory
// executable, or moved a mapping.
bool may_map_changeable_code(const SystemCall& call);

// Whether the call may have changed the memory map (the text of
// /proc/PID/maps): the translating tracer re-reads the maps only then.
bool changes_memory_map(const SystemCall& call);

// The address ranges whose mapping or contents the call may have changed
// in ways a mapping's present bytes do not show (stub/tracing/map_changes.h),
// page-aligned: the ranges of mmap (its result's without MAP_FIXED; not
// anonymous memory without PROT_EXEC), mprotect, madvise, mremap (old and
// new) and remap_file_pages, and the whole address space for a store
// through the program's memory file (`write` resolved by code_write_in)
// or process_vm_writev that succeeded. Not munmap: whatever the present
// holds there was mapped by a later call. `result`: the call's return
// value (rax at the stop after it).
std::vector<std::pair<uint64_t, uint64_t>> mapping_changes_of(const SystemCall& call, uint64_t result,
                                                              const CodeWrite& write);

}  // namespace stub::tracing
