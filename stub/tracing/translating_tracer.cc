// TranslatingTracer: which tracer a stop or a resume belongs to, and the
// threads' comings and goings (stub/tracing/translating_tracer.h).
#include "stub/tracing/translating_tracer.h"

#include <cstdio>

#include "protocol/amd64_registers.h"

namespace stub::tracing {

using protocol::Amd64Reg;

Expected<std::unique_ptr<TranslatingTracer>> TranslatingTracer::create(std::unique_ptr<SoftwareTracer> ptrace) {
  // Only int3 trace stops leave a thread free of debug registers and steps
  // between stops, which is what a lent thread must be.
  if (!ptrace || ptrace->trace_stops() != TraceStops::Breakpoint) {
    return btstub::make_error(btstub::ErrorCode::InvalidArgument,
                              "the translating tracer needs the ptrace tracer with int3 trace stops");
  }
  return std::unique_ptr<TranslatingTracer>(new TranslatingTracer(std::move(ptrace)));
}

void TranslatingTracer::adopt_threads(const std::vector<pid_t>& tids) {
  ptrace_->adopt_threads(tids);
  live_.insert(tids.begin(), tids.end());
}

void TranslatingTracer::forget_process() {
  ptrace_->forget_process();
  cache_.forget();
  threads_.clear();
  live_.clear();
  refused_.clear();
  breakpoints_.clear();
  code_.reset();
  code_stale_ = true;
  code_written_ = false;
  flush_pending_ = false;
  pending_links_.clear();
  free_areas_.clear();
}

std::string TranslatingTracer::activity() const {
  const Stats& s = stats_;
  // Each thread's own share (the threads still there), so that a test can
  // tell a thread that ran in the cache from one the ptrace tracer ran.
  std::string out = "Translated code: " + std::to_string(s.translations) + " blocks translated, " +
                    std::to_string(s.untranslatable) + " left to int3s; " + std::to_string(s.branches) +
                    " branches logged in the program; exits: " + std::to_string(s.direct_exits) + " direct, " +
                    std::to_string(s.indirect_exits) + " indirect, " + std::to_string(s.full_exits) +
                    " log full; " + std::to_string(s.exits_to_int3s) + " of them to code left to int3s; " +
                    std::to_string(s.links) + " links, " + std::to_string(s.entries) + " entries, " +
                    std::to_string(s.flushes) + " flushes, " + std::to_string(s.repairs) + " repaired stops, " +
                    std::to_string(s.held) + " threads moved out at others' stops.\n" +
                    "Translated ahead of a visit: " + std::to_string(s.ahead) + " of the blocks, with " +
                    std::to_string(s.ahead_links) + " of the links, and " +
                    std::to_string(s.ahead_entries) + " return sites entered; " + std::to_string(s.slot_entries) +
                    " targets read from jmp/call slots entered.\n";
  for (const auto& [tid, th] : threads_) {
    out += "  thread " + std::to_string(tid) + ": " + std::to_string(th.logged) + " branches logged by translated code" +
           (th.area.base == 0 ? "" : th.area.shared ? " (log shared with btstub)" : " (log read from the program)") +
           (th.others.empty() ? ""
                              : "; " + std::to_string(1 + th.others.size()) + " logs, switched " +
                                    std::to_string(th.switches) + " times") +
           "\n";
  }
  if (s.lost_logs != 0) {
    out += "Logs lost (the program wrote over btstub's area), each a gap in the trace: " +
           std::to_string(s.lost_logs) + "\n";
  }
  if (!last_refusal_.empty()) out += "Last block left to int3s: " + last_refusal_ + "\n";
  for (const auto& [reason, r] : refusals_) {
    char example[32];
    std::snprintf(example, sizeof example, "0x%llx", static_cast<unsigned long long>(r.example));
    out += "  left to int3s, " + reason + ": " + std::to_string(r.blocks) + " blocks (first " + example + "), " +
           std::to_string(r.exits) + " exits to them\n";
  }
  return out + ptrace_->activity();
}

TranslatingTracer::Thread* TranslatingTracer::thread(pid_t tid) {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : &it->second;
}

StepKind TranslatingTracer::before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) {
  const StepKind kind = plan_resume(control, tid, requested, signal);
  ptrace_->note_resumed(control, tid, kind, signal);
  return kind;
}

TraceVerdict TranslatingTracer::on_stop(TracedThreadControl& control, const TracedStop& stop) {
  ptrace_->note_stopped(stop.tid);
  const TraceVerdict verdict = judge_stop(control, stop);
  ptrace_->note_verdict(control, stop.tid, verdict);
  return verdict;
}

StepKind TranslatingTracer::plan_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) {
  live_.insert(tid);
  if (Thread* th = thread(tid); th != nullptr && th->in_cache) {
    // Kept stopped quietly in the cache (never reported): it goes on there.
    return StepKind::Continue;
  }
  if (requested == StepKind::Continue && signal == 0) {
    auto regs = control.read_general_registers(tid);
    if (regs) {
      const uint64_t pc = regs->get_u64(Amd64Reg::rip);
      if (may_enter(control, tid, *regs) && enter(control, tid, pc)) return StepKind::Continue;
    }
  }
  // The ptrace tracer runs it: system calls may change the code.
  code_stale_ = true;
  return ptrace_->before_resume(control, tid, requested, signal);
}

TraceVerdict TranslatingTracer::judge_stop(TracedThreadControl& control, const TracedStop& stop) {
  if (Thread* th = thread(stop.tid); th != nullptr && th->in_cache) {
    const TraceVerdict verdict = on_cache_stop(control, *th, stop);
    // Looked up again: a checkpoint taken on the way (lending the thread
    // back) may have seen it end, and its Thread with it.
    th = thread(stop.tid);
    // Absorbed while the process layer stops every thread: the thread
    // stays stopped, and the client sees it, so not in the cache.
    if (th != nullptr && th->in_cache && control.stopping_all()) {
      bring_out(control, stop.tid, *th);
      return TraceVerdict::Continue;
    }
    return verdict;
  }
  const TraceVerdict verdict = ptrace_->on_stop(control, stop);
  if (verdict != TraceVerdict::Continue) {
    // A stop the client sees (it may write memory, run the program for a
    // while untraced): the code may have changed by the next entry. A step
    // is of a system call, which note_system_call judges after it.
    if (verdict != TraceVerdict::SingleStep || maps_may_change_unseen()) code_stale_ = true;
    return verdict;
  }
  // The ptrace tracer lets the thread go on: from here the cache may run it.
  auto regs = control.read_general_registers(stop.tid);
  if (!regs) return verdict;
  const uint64_t pc = regs->get_u64(Amd64Reg::rip);
  if (may_enter(control, stop.tid, *regs) && enter(control, stop.tid, pc)) return TraceVerdict::Continue;
  return verdict;
}

void TranslatingTracer::note_system_call(const SystemCall& call, const CodeWrite& write) {
  if (changes_memory_map(call)) code_stale_ = true;
  if (code_written_ || !code_) return;  // nothing (more) to drop
  code_written_ = changes_code(write, *code_);
}

void TranslatingTracer::client_wrote(uint64_t begin, uint64_t end) {
  // Dropped at the next entry, as after a system call's store into code.
  if (code_ && code_->overlaps(begin, end)) code_written_ = true;
  ptrace_->client_wrote(begin, end);
}

void TranslatingTracer::on_held(TracedThreadControl& control, pid_t tid) {
  if (Thread* th = thread(tid); th != nullptr && th->in_cache) {
    bring_out(control, tid, *th);
    return;
  }
  ptrace_->on_held(control, tid);
}

void TranslatingTracer::on_thread_created(pid_t tid, pid_t parent) {
  ptrace_->on_thread_created(tid, parent);
  live_.insert(tid);
}

void TranslatingTracer::on_thread_exited(pid_t tid) {
  // Its log's chunks encoded: the area may serve another thread next.
  ptrace_->return_lent_memory(tid);
  ptrace_->on_thread_exited(tid);
  live_.erase(tid);
  // Its area serves the next new thread. (A thread killed in the cache, by
  // another's exit_group or a SIGKILL, takes the branches its log held
  // since its last stop with it.)
  if (Thread* th = thread(tid); th != nullptr && th->area.base != 0) {
    free_areas_.push_back(FreeArea{std::move(th->area), std::move(th->others), std::move(th->table_entries)});
  }
  threads_.erase(tid);
  // The program's last thread: its memory is gone, and with it what the
  // areas were for; btstub's own mappings of them (1.5 MiB each) go now,
  // not at the next run, while the history is read after the exit.
  if (live_.empty()) free_areas_.clear();
}

void TranslatingTracer::on_exec(pid_t tid) {
  ptrace_->on_exec(tid);
  // A new address space: no cache, no areas, one thread.
  cache_.forget();
  refused_.clear();
  threads_.clear();
  live_.clear();
  live_.insert(tid);
  code_.reset();
  code_stale_ = true;
  code_written_ = false;
  flush_pending_ = false;
  pending_links_.clear();
  free_areas_.clear();
}

bool TranslatingTracer::others_in_cache(pid_t tid) const {
  for (const auto& [other, th] : threads_) {
    if (other != tid && th.in_cache) return true;
  }
  return false;
}

}  // namespace stub::tracing
