#pragma once
// btstub's own heap, faulted in ahead of its use by a thread of its own.
//
// A recording's store is memory touched for the first time (Lua at
// --scale 30: ~360 MB, in 2 MiB pages: malloc_restart.h), and on the VMs
// btstub runs in the kernel zeroes fresh pages at some 0.6 GB/s: a quarter
// of the tracer's thread while it drained translated code's logs went to
// those faults. glibc grows its main heap by top_pad (32 MiB) beyond what
// it hands out; this thread populates the heap up to its end
// (MADV_POPULATE_WRITE faults the pages in and changes no byte, so it may
// run beside malloc's own writes) on CPUs the tracer and the program do
// not run on: on theirs (btstub pins both to one) the faults only moved
// from one thread to another, the recording as long.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace stub::tracing {

class HeapPrefaulter {
 public:
  // Its thread's name (/proc/PID/task/TID/comm).
  static constexpr const char* kThreadName = "btstub-heap";

  HeapPrefaulter() = default;
  ~HeapPrefaulter();
  HeapPrefaulter(const HeapPrefaulter&) = delete;
  HeapPrefaulter& operator=(const HeapPrefaulter&) = delete;

  // Cheap (no system call): if the heap grew past what was populated,
  // the thread populates it up to its end. The first call starts the
  // thread, on `cpus` (empty: where the caller may run) at idle priority,
  // placed before it runs; it never waits for the thread.
  void ahead(const std::vector<int>& cpus);
  // Until the thread has populated what the last ahead() asked (tests).
  void wait_idle();
  // The heap's end as the thread last populated it (0: not yet).
  uint64_t populated_end() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  uint64_t populated_ = 0;  // [heap start, populated_) faulted in
  uint64_t wanted_ = 0;     // the heap's end at the last ahead()
  bool lower_own_ = false;  // SCHED_IDLE was refused: the thread lowers its own
  bool ended_ = false;      // the thread is done (no heap, or stopped)
  bool stop_ = false;       // asked to end (the destructor)
  std::thread thread_;
};

}  // namespace stub::tracing
