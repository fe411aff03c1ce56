// Time stamp counter reads under recording (Process::trap_time_stamp_counter):
// rdtsc and rdtscp fault in the program (prctl PR_SET_TSC, PR_TSC_SIGSEGV,
// injected into each thread; new threads and fork children inherit it) and
// the process layer does the read, so the value the program gets is one a
// copy re-running the past could never get again: the tracer takes a
// checkpoint after it, and a copy that meets a read stops there.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <x86intrin.h>

#include "stub/process/ptrace_internal.h"
#include "stub/process/ptrace_process.h"

namespace stub::process {

using namespace ptrace_detail;
using btstub::ErrorCode;
using btstub::make_error;

namespace {

Expected<void> set_tsc_mode(pid_t tid, bool trap, std::vector<int>& signals_met) {
  auto call = inject_syscall(tid, SYS_prctl, {PR_SET_TSC, static_cast<uint64_t>(trap ? PR_TSC_SIGSEGV : PR_TSC_ENABLE)});
  if (!call) return call.error();
  signals_met.insert(signals_met.end(), call->signals_met.begin(), call->signals_met.end());
  if (call->result != 0) return make_error(ErrorCode::Internal, "prctl(PR_SET_TSC) failed in thread " + std::to_string(tid));
  return {};
}

}  // namespace

Expected<void> PtraceProcess::trap_time_stamp_counter(bool on) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  if (on == tsc_trapped_) return {};
  Expected<void> result;
  for (auto& [tid, thread] : threads_) {
    if (thread.exited) continue;
    if (thread.running) {
      result = make_error(ErrorCode::InvalidArgument, "The program is running");
      continue;
    }
    std::vector<int> signals;
    if (auto set = set_tsc_mode(tid, on, signals); !set) result = set.error();
    for (int signal : signals) requeue_signal(tid, signal);
  }
  // Trapped in some threads and not others is still trapped: faults are
  // emulated wherever they come from.
  tsc_trapped_ = on || !result;
  return result;
}

void PtraceProcess::untrap_time_stamp_counter(pid_t tid) {
  std::vector<int> signals;
  (void)set_tsc_mode(tid, false, signals);
  for (int signal : signals) (void)::syscall(SYS_tgkill, tid, tid, signal);
}

std::optional<uint64_t> PtraceProcess::emulate_time_stamp_read(pid_t tid) {
  user_regs_struct regs{};
  if (!do_ptrace(PTRACE_GETREGS, tid, 0, &regs)) return std::nullopt;
  const uint64_t pc = regs.rip;
  auto code = read_memory(pc, 3);
  if (!code || code->size() < 2 || (*code)[0] != 0x0f) return std::nullopt;
  uint64_t value = 0;
  if ((*code)[1] == 0x31) {  // rdtsc
    value = __rdtsc();
    regs.rip = pc + 2;
  } else if (code->size() == 3 && (*code)[1] == 0x01 && (*code)[2] == 0xf9) {  // rdtscp
    unsigned aux = 0;
    value = __rdtscp(&aux);
    regs.rcx = aux;
    regs.rip = pc + 3;
  } else {
    return std::nullopt;
  }
  regs.rax = value & 0xffffffffu;
  regs.rdx = value >> 32;
  if (!do_ptrace(PTRACE_SETREGS, tid, 0, &regs)) return std::nullopt;
  return pc;
}

}  // namespace stub::process
