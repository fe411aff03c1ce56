#include "stub/process/repeated_call.h"

#include <sys/mman.h>
#include <sys/syscall.h>

namespace stub::process {
namespace {

// The kernel returns -4095..-1 for errors.
bool failed(long result) { return result < 0 && result >= -4095; }

}  // namespace

std::optional<RepeatedCall> repeatable_call(uint64_t pc, long number, const std::array<uint64_t, 6>& args,
                                            long result, std::optional<uint64_t> brk_before) {
  const RepeatedCall call{pc, number, args, result, 0};
  switch (number) {
    case SYS_brk:
      if (!brk_before || static_cast<uint64_t>(result) < *brk_before) return std::nullopt;
      return call;
    case SYS_mmap: {
      const uint64_t flags = args[3];
      // Shared anonymous memory is seen by the program's children; a file
      // mapping reads the file as it is when the copy runs; MAP_FIXED
      // replaces what was there.
      if ((flags & MAP_TYPE) != MAP_PRIVATE || (flags & MAP_ANONYMOUS) == 0 || (flags & MAP_FIXED) != 0 ||
          failed(result)) {
        return std::nullopt;
      }
      return call;
    }
    case SYS_mprotect:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_sched_yield:
      if (result != 0) return std::nullopt;
      return call;
    default:
      return std::nullopt;
  }
}

std::array<uint64_t, 6> repeated_args(const RepeatedCall& call) {
  std::array<uint64_t, 6> args = call.args;
  if (call.number == SYS_mmap && (args[3] & MAP_FIXED_NOREPLACE) == 0) {
    args[0] = static_cast<uint64_t>(call.result);
    args[3] |= MAP_FIXED_NOREPLACE;
  }
  return args;
}

bool made_again(const RepeatedCall& call) {
  return call.number == SYS_brk || call.number == SYS_mmap || call.number == SYS_mprotect;
}

std::string call_name(long number) {
  switch (number) {
    case SYS_brk: return "brk";
    case SYS_mmap: return "mmap";
    case SYS_mprotect: return "mprotect";
    case SYS_nanosleep: return "nanosleep";
    case SYS_clock_nanosleep: return "clock_nanosleep";
    case SYS_sched_yield: return "sched_yield";
    default: return "system call " + std::to_string(number);
  }
}

}  // namespace stub::process
