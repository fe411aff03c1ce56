#pragma once
// A decoder::ChunkPacker that packs on worker threads, so that sealing a
// trace's chunks as PT segments costs the recording nothing while a core
// is free: the tracer hands a chunk over and goes on; the workers pack
// while the tracer waits for the program's next stop. One serves every
// thread's trace (SoftwareTracer). Jobs are independent (a trace collects
// each result by its first sequence number, decoder/block_trace.h), so
// any worker takes the next one; each keeps its own decoded blocks
// (decoder::SegmentPacker). The workers block every signal: they are the
// server's to take, on its own thread.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "decoder/chunk_packer.h"

namespace stub::tracing {

// Places a thread just started, from the thread that started it: binds
// it to `cpus` (empty: leaves it where it may run) and, if `idle`, makes
// it run only when its CPU has nothing else to run (SCHED_IDLE). The
// packing workers, and the heap prefaulter's thread. Done by the starter
// so that it never waits for the thread itself: at idle priority, on a
// CPU another process keeps busy, a thread may not run for seconds (the
// tracer waited there for it, the program stopped). Returns false where
// SCHED_IDLE was refused: the thread then calls lower_own_priority().
bool place_thread(std::thread& thread, const std::vector<int>& cpus, bool idle);
// The next best to SCHED_IDLE, for the calling thread: the lowest nice
// value's weight.
void lower_own_priority();

// Where the workers run.
struct PackerPlacement {
  // `workers` at normal priority on `cpus` (empty: where the thread
  // creating the packer may run).
  std::vector<int> cpus;
  std::size_t workers = 1;
  // One more at idle priority (SCHED_IDLE) on `idle_cpus` (empty: as
  // above): it packs on the CPU the tracer and the program share in the
  // time they leave it, and gives way to either at once. With it, only it
  // takes jobs with code (PT packs); the others only encode.
  bool idle_worker = false;
  std::vector<int> idle_cpus;
};

class BackgroundPacker final : public decoder::ChunkPacker {
 public:
  explicit BackgroundPacker(PackerPlacement placement = {});
  // Jobs not started are put back unpacked (their chunks stay explicit);
  // the ones running finish first.
  ~BackgroundPacker() override;
  BackgroundPacker(const BackgroundPacker&) = delete;
  BackgroundPacker& operator=(const BackgroundPacker&) = delete;

  void submit(std::shared_ptr<decoder::PackInbox> inbox, decoder::PackJob job) override;
  std::size_t workers() const { return workers_.size(); }
  // Jobs with code run so far by the worker at idle priority (`idle`), or
  // by the others.
  std::size_t packs_run(bool idle) const { return (idle ? packs_idle_ : packs_normal_).load(); }

 private:
  void work(std::size_t index, bool idle);

  std::mutex mutex_;
  std::condition_variable wake_;
  // Per worker: SCHED_IDLE was refused, it lowers its own priority. The
  // constructor holds mutex_ while it starts and places the workers
  // (place_thread), and each takes mutex_ before it works: none works
  // where it does not stay, and the constructor never waits for them.
  std::vector<char> lower_own_;
  using Queued = std::pair<std::shared_ptr<decoder::PackInbox>, decoder::PackJob>;
  // Jobs that only encode (no code snapshot) go first: each takes 25-30
  // µs and frees a raw chunk's structs, where a PT check takes 1-2 ms.
  std::deque<Queued> encodes_;
  // Jobs that encode a tracer's log where it lies (PackJob::lent): only
  // workers at normal priority take them.
  std::deque<Queued> lent_;
  std::deque<Queued> packs_;
  bool stopping_ = false;
  // With an idle worker, only it packs: a pack takes 1-2 ms, and encodes
  // queued behind it on a normal worker were left to the tracer, on the
  // program's CPU. Packing is what the time the tracer and the program
  // leave their CPU is for (PackerPlacement::idle_worker).
  bool idle_packs_ = false;
  std::atomic<std::size_t> packs_idle_{0};
  std::atomic<std::size_t> packs_normal_{0};
  std::vector<std::thread> workers_;
};

}  // namespace stub::tracing
