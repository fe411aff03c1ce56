#include "stub/tracing/background_packer.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>

namespace stub::tracing {

BackgroundPacker::BackgroundPacker(PackerPlacement placement) {
  // The workers inherit the mask they are created with.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  idle_packs_ = placement.idle_worker;  // before any worker reads it
  const std::size_t normal = std::max<std::size_t>(1, placement.workers);
  // Held until every worker is placed: each takes it first.
  std::unique_lock lock(mutex_);
  for (std::size_t i = 0; i < normal; ++i) {
    workers_.emplace_back([this, i] { work(i, false); });
    lower_own_.push_back(!place_thread(workers_.back(), placement.cpus, false));
  }
  if (placement.idle_worker) {
    workers_.emplace_back([this, i = normal] { work(i, true); });
    lower_own_.push_back(!place_thread(workers_.back(), placement.idle_cpus, true));
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

BackgroundPacker::~BackgroundPacker() {
  std::deque<Queued> left;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    left.swap(encodes_);
    for (Queued& queued : packs_) left.push_back(std::move(queued));
    packs_.clear();
    for (Queued& queued : lent_) left.push_back(std::move(queued));
    lent_.clear();
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  for (auto& [inbox, job] : left) inbox->put(decoder::unrun_pack_job(job));
}

void BackgroundPacker::submit(std::shared_ptr<decoder::PackInbox> inbox, decoder::PackJob job) {
  const bool job_is_pack = job.code != nullptr;
  const bool job_is_lent = job.lent != nullptr;
  {
    std::lock_guard lock(mutex_);
    (job_is_pack ? packs_ : job_is_lent ? lent_ : encodes_).emplace_back(std::move(inbox), std::move(job));
  }
  // A pack or a lent log wakes them all: the one worker woken might not take it.
  if (job_is_pack || job_is_lent) {
    wake_.notify_all();
  } else {
    wake_.notify_one();
  }
}

bool place_thread(std::thread& thread, const std::vector<int>& cpus, bool idle) {
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    }
    // Else it stays where it was started.
    (void)pthread_setaffinity_np(thread.native_handle(), sizeof set, &set);
  }
  if (!idle) return true;
  sched_param none{};
  return pthread_setschedparam(thread.native_handle(), SCHED_IDLE, &none) == 0;
}

void lower_own_priority() { (void)setpriority(PRIO_PROCESS, 0, 19); }

void BackgroundPacker::work(std::size_t index, bool idle) {
  {
    std::lock_guard lock(mutex_);  // once the constructor placed every worker
    if (lower_own_[index]) lower_own_priority();
  }
  auto insns = decoder::InstructionDecoder::create();
  std::optional<decoder::SegmentPacker> packer;
  if (insns) packer.emplace(std::move(*insns));
  const bool takes_packs = idle || !idle_packs_;
  // Never at idle priority: the tracer waits for them at the program's
  // next exit, and the program's CPU is idle only while it waits.
  const bool takes_lent = !idle;
  for (;;) {
    Queued next;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !encodes_.empty() || (takes_lent && !lent_.empty()) || (takes_packs && !packs_.empty());
      });
      if (stopping_) return;
      std::deque<Queued>& from = takes_lent && !lent_.empty() ? lent_ : encodes_.empty() ? packs_ : encodes_;
      next = std::move(from.front());
      from.pop_front();
    }
    if (next.second.code) ++(idle ? packs_idle_ : packs_normal_);
    decoder::PackResult result =
        packer ? decoder::run_pack_job(next.second, *packer) : decoder::unrun_pack_job(next.second);
    // Let go of the branches before the result is seen: the trace then
    // holds them alone and may refill them (BlockTrace::recycle).
    next.second = {};
    next.first->put(std::move(result));
  }
}

}  // namespace stub::tracing
