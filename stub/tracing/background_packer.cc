#include "stub/tracing/background_packer.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

namespace stub::tracing {

BackgroundPacker::BackgroundPacker() {
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

// The server pins itself and the program to one CPU (stub/server/
// cpu_affinity.h), where they take turns at every ptrace stop; the worker
// inherits that CPU and would only take turns with them. It runs on the
// others instead, where there are any.
void move_off_current_cpu() {
  const int here = sched_getcpu();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (here < 0 || cpus <= 1) return;
  cpu_set_t others;
  CPU_ZERO(&others);
  for (long cpu = 0; cpu < cpus && cpu < CPU_SETSIZE; ++cpu) {
    if (cpu != here) CPU_SET(static_cast<int>(cpu), &others);
  }
  (void)sched_setaffinity(0, sizeof others, &others);
}

}  // namespace

void BackgroundPacker::work() {
  move_off_current_cpu();
  auto insns = decoder::InstructionDecoder::create();
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
    if (insns) {
      result = decoder::run_pack_job(next.second, *insns);
    } else {
      result.first_sequence = next.second.first_sequence;
      result.count = static_cast<uint32_t>(next.second.branches.size());
    }
    next.first->put(std::move(result));
  }
}

}  // namespace stub::tracing
