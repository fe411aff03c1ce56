#pragma once
// A thread's pending and blocked signals, and its process's ignored and
// caught ones, as /proc/TID/status shows them:
// bit n-1 stands for signal n.
#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace stub::process {

struct ThreadSignalMasks {
  uint64_t thread_pending = 0;  // SigPnd: sent to this thread alone
  uint64_t shared_pending = 0;  // ShdPnd: sent to its process
  uint64_t blocked = 0;         // SigBlk
  uint64_t ignored = 0;         // SigIgn: its process's dispositions
  uint64_t caught = 0;          // SigCgt

  // Signals waiting in either queue that the thread does not block.
  uint64_t unblocked_pending() const { return (thread_pending | shared_pending) & ~blocked; }
  // Whether `mask` holds `signal` (1-64).
  static bool holds(uint64_t mask, int signal) { return signal >= 1 && signal <= 64 && (mask >> (signal - 1) & 1) != 0; }
};

// nullopt when the file cannot be read or lacks one of the five (the
// thread is gone): unknown, never empty masks.
std::optional<ThreadSignalMasks> read_thread_signal_masks(pid_t tid);

}  // namespace stub::process
