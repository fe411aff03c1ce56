// PerfBackend: which threads are traced, and the thread life-cycle hooks.
#include "stub/tracing/perf_backend.h"

namespace stub::tracing {

using btstub::ErrorCode;
using btstub::make_error;

bool PerfBackend::traces(pid_t tid) const {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return it->second.enabled && !it->second.exited;
  return all_enabled_;
}

StepKind PerfBackend::before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int) {
  if (Thread* t = lazy_state(tid); t != nullptr && t->enabled) learn_origin(*t, tid, &control);
  return requested;
}

TraceVerdict PerfBackend::on_stop(TracedThreadControl&, const TracedStop&) { return TraceVerdict::Report; }

void PerfBackend::on_thread_created(pid_t tid, pid_t) {
  auto it = threads_.find(tid);
  if (it != threads_.end() && !it->second.exited) return;
  if (it != threads_.end()) {
    close_event(it->second);
    threads_.erase(it);  // a recycled tid starts afresh
  }
  if (all_enabled_) (void)start(threads_[tid], tid, false);
}

void PerfBackend::on_thread_exited(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  Thread& t = it->second;
  refresh(t);  // the last branches, before the buffer goes
  close_event(t);
  t.exited = true;
}

void PerfBackend::on_exec(pid_t tid) {
  for (auto& [other, t] : threads_) {
    if (other != tid && !t.exited) on_thread_exited(other);
  }
  Thread* t = lazy_state(tid);
  if (t == nullptr || !t->trace) return;
  // The old code is gone; the event stays with the thread.
  refresh(*t);
  t->trace->clear(0);
  t->origin_known = false;
}

Expected<void> PerfBackend::enable(pid_t tid) {
  Thread& t = threads_[tid];
  if (t.enabled && !t.exited) return make_error(ErrorCode::InvalidArgument, "Btrace already enabled.");
  return start(t, tid, true);
}

Expected<void> PerfBackend::disable(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.enabled) {
    return make_error(ErrorCode::InvalidArgument, "Btrace not enabled.");
  }
  close_event(it->second);
  it->second.enabled = false;
  it->second.trace.reset();
  return {};
}

bool PerfBackend::enabled(pid_t tid) const {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return it->second.enabled;
  return all_enabled_;
}

Expected<void> PerfBackend::enable_all() {
  all_enabled_ = true;
  Expected<void> result;
  for (auto& [tid, t] : threads_) {
    if (t.enabled || t.exited) continue;
    if (auto started = start(t, tid, true); !started && result) result = started;
  }
  return result;
}

void PerfBackend::disable_all() {
  all_enabled_ = false;
  for (auto& [tid, t] : threads_) {
    if (t.enabled) (void)disable(tid);
  }
}

const decoder::BlockTrace* PerfBackend::trace(pid_t tid) const {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return nullptr;
  refresh(it->second);
  return it->second.trace.get();
}

Expected<TraceConfig> PerfBackend::thread_config(pid_t tid) const {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.trace) return make_error(ErrorCode::InvalidArgument, "Btrace not enabled.");
  return it->second.config;
}

void PerfBackend::adopt_threads(const std::vector<pid_t>& tids) {
  if (!all_enabled_) return;
  for (pid_t tid : tids) {
    if (threads_.find(tid) == threads_.end()) (void)start(threads_[tid], tid, true);
  }
}

void PerfBackend::forget_process() {
  for (auto& [tid, t] : threads_) close_event(t);
  threads_.clear();
}

}  // namespace stub::tracing
