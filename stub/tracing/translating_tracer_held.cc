// TranslatingTracer: a thread in the code cache that stops because another
// thread did (all-stop's SIGSTOP, a non-stop vCont;t, or an exit of its own
// absorbed while every thread is being stopped), or because btstub lets
// the program go while it runs (detach). The client is about to see it,
// or the cache is about to go, so it is moved out of the cache first, as a
// stop of its own would be, but it goes no further: it stays stopped
// outside, lent, its log drained, and the next resume puts it back.
#include <csignal>
#include <cstdio>

#include "protocol/amd64_registers.h"
#include "stub/tracing/translating_tracer.h"

namespace stub::tracing {

using protocol::Amd64Reg;

namespace {

// As for a repair of a thread's own stop (translating_tracer_exits.cc).
constexpr int kMaxSteps = 256;

}  // namespace

void TranslatingTracer::bring_out(TracedThreadControl& control, pid_t tid, Thread& th) {
  ++stats_.held;
  for (int steps = 0;; ++steps) {
    auto regs = control.read_general_registers(tid);
    if (!regs) {
      th.in_cache = false;  // gone; its end is reported as usual
      return;
    }
    const uint64_t pc = regs->get_u64(Amd64Reg::rip);
    Slots slots;
    // Just past an exit's int3: the branch is taken. A step of ours ran
    // it, or a detach stood the thread still and swallowed the int3's trap
    // that came before its SIGSTOP (PtraceProcess::stop_running_thread);
    // elsewhere that trap goes to on_stop first, which leaves the exit.
    if (const TranslationCache::Trap trap = cache_.trap_at(pc); trap.translation != nullptr) {
      const auto taken = take_exit(control, th, tid, trap, *regs);
      if (taken && taken->before) {
        (void)step_out(control, th, tid, taken->before->from, &*taken->before);
      } else {
        (void)step_out(control, th, tid, taken ? taken->target : trap.translation->original_pc(pc - 1));
      }
      return;
    }
    const decoder::Translation* t = cache_.holding(pc);
    if (t == nullptr) {
      std::fprintf(stderr, "btstub: a held thread stood in the code cache outside every translation (0x%llx)\n",
                   static_cast<unsigned long long>(pc));
      (void)step_out(control, th, tid, pc);
      return;
    }
    if (t->at_entry(pc) || steps >= kMaxSteps) {
      if (!t->at_entry(pc)) {
        std::fprintf(stderr, "btstub: no clean point after %d steps in the code cache (0x%llx)\n", kMaxSteps,
                     static_cast<unsigned long long>(pc));
      }
      if (read_slots(control, th, slots)) (void)drain(control, tid, th, slots, t->original_pc(pc));
      (void)step_out(control, th, tid, t->original_pc(pc));
      return;
    }
    // Inside the instrumentation: step on to a clean point.
    if (steps == 0) ++stats_.repairs;
    auto signal = control.step_now(tid);
    if (!signal) {
      th.in_cache = false;  // gone
      return;
    }
    if (*signal == SIGTRAP) continue;
    const decoder::FaultPoint* fault = t->fault_point_at(pc);
    auto after = control.read_general_registers(tid);
    const bool faulted = fault != nullptr && (*signal == SIGSEGV || *signal == SIGBUS) && after &&
                         after->get_u64(Amd64Reg::rip) == pc;
    if (faulted && read_slots(control, th, slots)) {
      // The branch's own fault: undone, the thread is at the branch, which
      // faults again when it runs (the signal is not sent twice).
      protocol::RegisterFile back;
      if (fault->rax_saved) back.set_u64(Amd64Reg::rax, slots.saved_rax);
      if (fault->rcx_saved) back.set_u64(Amd64Reg::rcx, slots.saved_rcx);
      if (control.write_registers(tid, back)) {
        (void)drain(control, tid, th, slots, t->original_pc(pc));
        (void)step_out(control, th, tid, t->original_pc(pc));
        return;
      }
    }
    // A signal that came meanwhile: sent again once the thread is out.
    th.deferred.push_back(*signal);
  }
}

}  // namespace stub::tracing
