#pragma once
// A decoder::ChunkPacker that packs on one worker thread, so that sealing
// a trace's chunks as PT segments costs the recording nothing while a core
// is free: the tracer hands a chunk over and goes on; the worker packs
// while the tracer waits for the program's next stop. One serves every
// thread's trace (SoftwareTracer). The worker blocks every signal: they are
// the server's to take, on its own thread.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "decoder/chunk_packer.h"

namespace stub::tracing {

class BackgroundPacker final : public decoder::ChunkPacker {
 public:
  // The worker runs on `cpus` (empty: where the thread creating it may).
  explicit BackgroundPacker(std::vector<int> cpus = {});
  // Jobs not started are put back unpacked (their chunks stay explicit);
  // the one running finishes first.
  ~BackgroundPacker() override;
  BackgroundPacker(const BackgroundPacker&) = delete;
  BackgroundPacker& operator=(const BackgroundPacker&) = delete;

  void submit(std::shared_ptr<decoder::PackInbox> inbox, decoder::PackJob job) override;

 private:
  void work();

  std::vector<int> cpus_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<std::shared_ptr<decoder::PackInbox>, decoder::PackJob>> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace stub::tracing
