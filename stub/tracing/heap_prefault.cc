#include "stub/tracing/heap_prefault.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "stub/process/page_size.h"
#include "stub/tracing/background_packer.h"

namespace stub::tracing {

namespace {

// A step of populating: one huge page, so that a heap trimmed meanwhile
// costs at most a step's failure.
constexpr uint64_t kStep = uint64_t{2} << 20;

// The break, on a page (madvise wants whole pages).
uint64_t heap_end() { return reinterpret_cast<uint64_t>(sbrk(0)) & ~(kPageSize - 1); }

// Where the main heap begins ([heap] in /proc/self/maps), or 0.
uint64_t heap_start() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < 6 || line.compare(line.size() - 6, 6, "[heap]") != 0) continue;
    try {
      return std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

}  // namespace

HeapPrefaulter::~HeapPrefaulter() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void HeapPrefaulter::ahead(const std::vector<int>& cpus) {
  const uint64_t end = heap_end();
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) {
    // Placed here, under mutex_, which it takes before anything else: one
    // that placed itself ran beside the workers at their priority until
    // then (a test read its policy there under load), and waiting for it
    // to do so stopped the program while its CPU was busy (seconds, under
    // another process's load: the thread at idle priority by then).
    thread_ = std::thread([this] { run(); });
    // Behind the packing workers on those CPUs: a worker it preempted held
    // a chunk of a lent log that the tracer's thread waited for at the
    // next exit, the program stopped meanwhile (Lua: 0.3 s of waiting a
    // recording, not 0.02 s; the faults it does not take ahead are taken
    // where the heap grows, as without it). Else it stays where the
    // tracer is.
    lower_own_ = !cpus.empty() && !place_thread(thread_, cpus, true);
  }
  if (end == wanted_) return;
  wanted_ = end;
  populated_ = std::min(populated_, end);  // trimmed: what lies past the end went
  wake_.notify_one();
}

void HeapPrefaulter::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !thread_.joinable() || ended_ || populated_ >= wanted_; });
}

uint64_t HeapPrefaulter::populated_end() const {
  std::lock_guard lock(mutex_);
  return populated_;
}

void HeapPrefaulter::run() {
  (void)pthread_setname_np(pthread_self(), kThreadName);  // told apart from the packing workers
  {
    std::lock_guard lock(mutex_);  // once ahead() placed it
    if (lower_own_) lower_own_priority();
  }
  const uint64_t start = heap_start();
  std::unique_lock lock(mutex_);
  // No [heap] (a sanitizer's allocator, say): nothing to do.
  if (start == 0) {
    ended_ = true;
    idle_.notify_all();
    return;
  }
  if (populated_ == 0) populated_ = start;
  while (!stop_) {
    if (populated_ >= wanted_) {
      idle_.notify_all();
      wake_.wait(lock, [&] { return stop_ || populated_ < wanted_; });
      if (stop_) break;
    }
    // A step at a time, the lock let go: ahead() never waits on a fault.
    const uint64_t at = populated_;
    const uint64_t end = std::min(wanted_, (at + kStep) & ~(kStep - 1));
    lock.unlock();
    // A failure (the heap shrank meanwhile) is no matter: nothing is
    // changed, and ahead() sees the new end.
    (void)madvise(reinterpret_cast<void*>(at), end - at, MADV_POPULATE_WRITE);
    lock.lock();
    // Unless ahead() saw the heap end below `at` meanwhile (then it set
    // populated_ there): up to this step's end, or the heap's if lower.
    if (populated_ == at) populated_ = std::min(end, wanted_);
  }
  ended_ = true;
  idle_.notify_all();
}

}  // namespace stub::tracing
