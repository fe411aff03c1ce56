#include "stub/tracing/background_packer.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

namespace stub::tracing {

BackgroundPacker::BackgroundPacker(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  // The worker inherits the mask it is created with.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  worker_ = std::thread([this] { work(); });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

BackgroundPacker::~BackgroundPacker() {
  std::deque<std::pair<std::shared_ptr<decoder::PackInbox>, decoder::PackJob>> left;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    left.swap(jobs_);
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (auto& [inbox, job] : left) {
    decoder::PackResult unpacked;
    unpacked.first_sequence = job.first_sequence;
    unpacked.count = static_cast<uint32_t>(job.branches.size());
    inbox->put(std::move(unpacked));
  }
}

void BackgroundPacker::submit(std::shared_ptr<decoder::PackInbox> inbox, decoder::PackJob job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.emplace_back(std::move(inbox), std::move(job));
  }
  wake_.notify_one();
}

namespace {

void run_on(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  (void)sched_setaffinity(0, sizeof set, &set);  // else it stays where it was started
}

}  // namespace

void BackgroundPacker::work() {
  run_on(cpus_);
  auto insns = decoder::InstructionDecoder::create();
  std::optional<decoder::SegmentPacker> packer;
  if (insns) packer.emplace(std::move(*insns));
  for (;;) {
    std::pair<std::shared_ptr<decoder::PackInbox>, decoder::PackJob> next;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      next = std::move(jobs_.front());
      jobs_.pop_front();
    }
    decoder::PackResult result;
    if (packer) {
      result = decoder::run_pack_job(next.second, *packer);
    } else {
      result.first_sequence = next.second.first_sequence;
      result.count = static_cast<uint32_t>(next.second.branches.size());
    }
    next.first->put(std::move(result));
  }
}

}  // namespace stub::tracing
