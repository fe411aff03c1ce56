#include "stub/process/ptrace_seccomp.h"

#include <linux/audit.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <string>

#include "stub/process/seccomp_filter.h"

namespace stub::process {
namespace {

constexpr std::size_t kSyscallBytes = 2;  // 0f 05
// More than the kernel lets a thread stack (32,768 instructions in all,
// each filter costing at least five).
constexpr long kMaxFilters = 8192;

enum class Mode { None, Strict, Filter, Unknown };

Mode seccomp_mode(pid_t tid) {
  std::ifstream status("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Seccomp:", 0) != 0) continue;
    const std::size_t at = line.find_first_not_of(" \t", 8);
    if (at == std::string::npos) return Mode::Unknown;
    switch (line[at]) {
      case '0': return Mode::None;
      case '1': return Mode::Strict;
      case '2': return Mode::Filter;
      default: return Mode::Unknown;
    }
  }
  return Mode::Unknown;
}

// The thread's filters, newest first (index 0); nullopt when they cannot
// be read.
std::optional<std::vector<std::vector<BpfInstruction>>> read_filters(pid_t tid) {
  std::vector<std::vector<BpfInstruction>> filters;
  for (long index = 0; index < kMaxFilters; ++index) {
    const long count = ::ptrace(PTRACE_SECCOMP_GET_FILTER, tid, reinterpret_cast<void*>(index), nullptr);
    if (count < 0) {
      if (errno == ENOENT && index > 0) return filters;  // past the oldest
      return std::nullopt;
    }
    std::vector<BpfInstruction> filter(static_cast<std::size_t>(count));
    if (::ptrace(PTRACE_SECCOMP_GET_FILTER, tid, reinterpret_cast<void*>(index), filter.data()) != count) {
      return std::nullopt;
    }
    filters.push_back(std::move(filter));
  }
  return std::nullopt;
}

}  // namespace

bool under_seccomp(pid_t tid) { return seccomp_mode(tid) != Mode::None; }

SeccompAnswer seccomp_answer(pid_t tid, long number, const std::vector<uint64_t>& args, uint64_t pc) {
  switch (seccomp_mode(tid)) {
    case Mode::None:
      return SeccompAnswer::Harmless;
    case Mode::Strict:
      // read, write, _exit and rt_sigreturn only (btstub makes neither of
      // the last two); any other call is a SIGKILL.
      return number == SYS_read || number == SYS_write ? SeccompAnswer::Harmless : SeccompAnswer::Harmful;
    case Mode::Unknown:
      return SeccompAnswer::Unknown;
    case Mode::Filter:
      break;
  }
  const auto filters = read_filters(tid);
  if (!filters) return SeccompAnswer::Unknown;
  SeccompCall call;
  call.number = static_cast<int32_t>(number);
  call.arch = AUDIT_ARCH_X86_64;
  call.pc = pc + kSyscallBytes;
  for (std::size_t i = 0; i < args.size() && i < call.args.size(); ++i) call.args[i] = args[i];
  const std::optional<uint32_t> verdict = seccomp_verdict(*filters, call);
  if (!verdict) return SeccompAnswer::Unknown;
  return seccomp_action_harmless(*verdict) ? SeccompAnswer::Harmless : SeccompAnswer::Harmful;
}

}  // namespace stub::process
