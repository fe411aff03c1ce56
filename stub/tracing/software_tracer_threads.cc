// SoftwareTracer: the TraceBackend side (which threads are traced, their
// buffers) and the thread life-cycle hooks.
#include "stub/tracing/software_tracer.h"

#include <algorithm>

#include "stub/tracing/background_packer.h"

#include "protocol/amd64_registers.h"
#include "stub/tracing/thread_code.h"

namespace stub::tracing {

Expected<void> SoftwareTracer::set_bound(uint64_t buffer_bytes) {
  config_.buffer_bytes = buffer_bytes;
  for (auto& [tid, t] : threads_) {
    t.config.buffer_bytes = buffer_bytes;
    if (t.trace) t.trace->resize(decoder::bts_records_for_bytes(buffer_bytes));
    if (t.trace && checkpoints_) checkpoints_->drop_before(tid, t.trace->first_sequence());
  }
  return {};
}

using btstub::ErrorCode;
using btstub::make_error;

SoftwareTracer::ThreadState* SoftwareTracer::state(pid_t tid) {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : &it->second;
}

const SoftwareTracer::ThreadState* SoftwareTracer::state(pid_t tid) const {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : &it->second;
}

// Under enable_all a thread we never heard of (the main thread at launch,
// threads present at attach) is traced from its first hook call.
SoftwareTracer::ThreadState* SoftwareTracer::traced_state(pid_t tid) {
  if (ThreadState* t = state(tid)) return t;
  if (!all_enabled_) return nullptr;
  ThreadState& t = threads_[tid];
  start_trace(t, tid, false);
  return &t;
}

void SoftwareTracer::start_trace(ThreadState& t, pid_t tid, bool stopped) {
  forget_brk();  // calls made untraced went unseen
  t.enabled = true;
  t.exited = false;
  t.origin_known = false;
  t.frozen = false;
  t.stopped_full = false;
  t.pending.reset();
  t.step.reset();
  t.lookahead.reset();
  t.config = config_;
  t.checkpoint_due = true;
  if (checkpoints_) checkpoints_->forget(tid);
  t.trace = std::make_unique<decoder::BlockTrace>(0, decoder::bts_records_for_bytes(config_.buffer_bytes),
                                                  config_.overflow);
  // PT chunks, but over code that may change (ensure_code_map).
  t.trace->set_code(std::make_shared<LiveCode>(&control_), std::make_shared<LiveCode>(&control_, &changeable_code_));
  if (!packer_) packer_ = std::make_shared<BackgroundPacker>(packer_placement_);
  t.trace->set_packer(packer_);  // ... packed off the tracer's path
  if (stopped && control_ != nullptr) {
    if (auto regs = control_->read_registers(tid)) ensure_origin(t, regs->get_u64(protocol::Amd64Reg::rip));
  }
}

void SoftwareTracer::ensure_origin(ThreadState& t, uint64_t pc) {
  if (t.origin_known || !t.trace) return;
  t.trace->clear(pc);
  t.origin_known = true;
}

bool SoftwareTracer::traces(pid_t tid) const {
  if (const ThreadState* t = state(tid)) return !t->exited && (t->enabled || t->disarm_pending);
  return all_enabled_;
}

Expected<void> SoftwareTracer::enable(pid_t tid) {
  ThreadState& t = threads_[tid];
  if (t.enabled && !t.exited) return make_error(ErrorCode::InvalidArgument, "Btrace already enabled.");
  start_trace(t, tid, true);
  untraced_met_ = false;
  return {};
}

Expected<void> SoftwareTracer::disable(pid_t tid) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->enabled) return make_error(ErrorCode::InvalidArgument, "Btrace not enabled.");
  t->enabled = false;
  forget_brk();
  t->trace.reset();
  if (checkpoints_) checkpoints_->forget(tid);
  t->pending.reset();
  t->step.reset();
  t->lookahead.reset();
  t->stopped_full = false;
  if (t->exited) return {};
  if (control_ == nullptr || !arm(*control_, *t, tid, std::nullopt)) t->disarm_pending = true;
  return {};
}

bool SoftwareTracer::enabled(pid_t tid) const {
  if (const ThreadState* t = state(tid)) return t->enabled;
  return all_enabled_;
}

Expected<void> SoftwareTracer::enable_all() {
  all_enabled_ = true;
  // No history yet: none of it lies before the changes noted so far.
  if (std::none_of(threads_.begin(), threads_.end(), [](const auto& t) { return t.second.trace != nullptr; })) {
    map_changes_.clear();
  }
  any_frozen_ = false;
  untraced_met_ = false;
  for (auto& [tid, t] : threads_) {
    if (!t.enabled && !t.exited) start_trace(t, tid, true);
    any_frozen_ = any_frozen_ || (t.enabled && t.frozen);
  }
  return {};
}

void SoftwareTracer::disable_all() {
  all_enabled_ = false;
  for (auto& [tid, t] : threads_) {
    if (t.enabled) (void)disable(tid);
  }
}

const decoder::BlockTrace* SoftwareTracer::trace(pid_t tid) const {
  const ThreadState* t = state(tid);
  return t != nullptr ? t->trace.get() : nullptr;
}

void SoftwareTracer::settle_traces() {
  for (auto& [tid, t] : threads_) {
    if (t.trace) t.trace->settle();
  }
}

Expected<TraceConfig> SoftwareTracer::thread_config(pid_t tid) const {
  const ThreadState* t = state(tid);
  if (t == nullptr || !t->trace) return make_error(ErrorCode::InvalidArgument, "Btrace not enabled.");
  return t->config;
}

bool SoftwareTracer::stopped_full(pid_t tid) const {
  const ThreadState* t = state(tid);
  return t != nullptr && t->stopped_full;
}

void SoftwareTracer::adopt_threads(const std::vector<pid_t>& tids) {
  if (!all_enabled_) return;
  for (pid_t tid : tids) {
    if (state(tid) == nullptr) start_trace(threads_[tid], tid, true);
  }
}

void SoftwareTracer::forget_process() {
  forget_brk();
  heap_shared_ = false;
  threads_.clear();
  if (checkpoints_) checkpoints_->clear();
  forget_code();
  code_map_stale_ = true;
}

void SoftwareTracer::on_thread_created(pid_t tid, pid_t /*parent*/) {
  forget_brk();  // the new thread's calls move the heap too
  ThreadState* t = state(tid);
  if (t != nullptr && !t->exited) return;  // already known (e.g. enabled by the client)
  if (!all_enabled_) {
    if (t != nullptr) threads_.erase(tid);  // a recycled tid starts untraced
    return;
  }
  // A new thread has no debug registers armed (clone does not copy ptrace
  // breakpoints) and its origin is read at its first resume.
  ThreadState& fresh = threads_[tid];
  fresh.armed.clear();
  fresh.runs_code = false;  // stopped until its first resume
  start_trace(fresh, tid, false);
}

void SoftwareTracer::on_thread_exited(pid_t tid) {
  ThreadState* t = state(tid);
  if (t == nullptr) return;
  t->exited = true;
  if (checkpoints_) checkpoints_->forget(tid);
  t->pending.reset();
  t->step.reset();
  t->lookahead.reset();
  t->armed.clear();
  t->disarm_pending = false;
}

void SoftwareTracer::on_exec(pid_t tid) {
  // The old code is gone, and with it what its blocks meant: the cache and
  // the surviving thread's trace start over (sequence numbers go on, so a
  // reader sees the loss). exec also clears ptrace's debug registers.
  forget_code();
  code_map_stale_ = true;
  forget_brk();  // a new program, a new heap
  heap_shared_ = false;
  if (checkpoints_) checkpoints_->clear();
  for (auto& [other, t] : threads_) {
    if (other != tid) on_thread_exited(other);
  }
  ThreadState* t = traced_state(tid);
  if (t == nullptr) return;
  t->exited = false;
  t->pending.reset();
  t->step.reset();
  t->lookahead.reset();
  t->armed.clear();
  t->disarm_pending = false;
  if (t->trace) t->trace->clear(0);
  t->origin_known = false;
  t->checkpoint_due = true;
}

}  // namespace stub::tracing
