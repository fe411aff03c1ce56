// stub/process/seccomp_filter.h: a seccomp filter run as the kernel runs
// it, checked against the kernel itself (a child installs the filter and
// makes the call: the errno it gets is the answer's data); the stacking of
// several filters; what is unknown. stub/process/ptrace_seccomp.h: a
// stopped tracee's filters read and asked about btstub's calls.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <catch2/catch.hpp>

#include "stub/process/seccomp_filter.h"
#include "stub/process/ptrace_seccomp.h"

namespace test_seccomp_filter {  // this file's own names, apart in a unity build

using stub::process::BpfInstruction;
using stub::process::run_seccomp_filter;
using stub::process::SeccompCall;

namespace {

BpfInstruction stmt(uint16_t code, uint32_t k) { return {code, 0, 0, k}; }
BpfInstruction jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { return {code, jt, jf, k}; }

constexpr uint32_t kNr = 0;     // offsetof(struct seccomp_data, nr)
constexpr uint32_t kArch = 4;   // arch
constexpr uint32_t kArg0 = 16;  // args[0], low word
constexpr uint32_t kArg1 = 24;  // args[1], low word

SeccompCall getppid_call(uint64_t arg0 = 0, uint64_t arg1 = 0) {
  SeccompCall call;
  call.number = SYS_getppid;
  call.arch = AUDIT_ARCH_X86_64;
  call.args[0] = arg0;
  call.args[1] = arg1;
  return call;
}

// Answers ERRNO with data computed from args[0] and args[1]: loads, the
// ALU with K and with X, memory, TAX/TXA, the conditional jumps, RET A.
std::vector<BpfInstruction> arithmetic_filter() {
  return {
      stmt(BPF_LD | BPF_W | BPF_ABS, kNr),
      jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 1, 0),
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      stmt(BPF_LD | BPF_W | BPF_ABS, kArg1),
      stmt(BPF_ST, 3),                         // M[3] = args[1]
      stmt(BPF_LD | BPF_W | BPF_ABS, kArg0),   // A = args[0]
      stmt(BPF_ALU | BPF_MUL | BPF_K, 3),      // A *= 3
      stmt(BPF_LDX | BPF_MEM, 3),              // X = args[1]
      stmt(BPF_ALU | BPF_ADD | BPF_X, 0),      // A += X
      jump(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1),
      stmt(BPF_ALU | BPF_XOR | BPF_K, 0x40),   // odd: A ^= 0x40
      jump(BPF_JMP | BPF_JGT | BPF_K, 1000, 0, 2),
      stmt(BPF_ALU | BPF_RSH | BPF_K, 2),      // over 1000: A >>= 2
      stmt(BPF_JMP | BPF_JA, 0),
      stmt(BPF_MISC | BPF_TAX, 0),             // X = A
      stmt(BPF_ALU | BPF_AND | BPF_K, 0x7f),   // A &= 0x7f (an exit code carries it)
      stmt(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
      stmt(BPF_RET | BPF_A, 0),
  };
}

// Forks a child that installs `filter` and calls getppid(arg0, arg1):
// the errno it got (0 when it was let through), as the child's exit code.
int kernel_errno(const std::vector<BpfInstruction>& filter, uint64_t arg0, uint64_t arg1) {
  const pid_t child = ::fork();
  if (child == 0) {
    sock_fprog prog{static_cast<unsigned short>(filter.size()),
                    reinterpret_cast<sock_filter*>(const_cast<BpfInstruction*>(filter.data()))};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      ::_exit(255);
    }
    const long r = ::syscall(SYS_getppid, arg0, arg1);
    ::_exit(r < 0 ? errno : 0);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) == 255 ? -1 : WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("run_seccomp_filter answers what the kernel answers") {
  const std::vector<BpfInstruction> filter = arithmetic_filter();
  const uint64_t samples[][2] = {{0, 0}, {1, 0}, {7, 5}, {100, 3}, {400, 1}, {333, 2}, {0xffffffff, 9}};
  for (const auto& [arg0, arg1] : samples) {
    const auto answer = run_seccomp_filter(filter, getppid_call(arg0, arg1));
    REQUIRE(answer.has_value());
    CHECK((*answer & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO);
    const int expected = kernel_errno(filter, arg0, arg1);
    INFO("args " << arg0 << ", " << arg1);
    REQUIRE(expected >= 0);
    CHECK(static_cast<int>(*answer & SECCOMP_RET_DATA) == expected);
  }
  // Another call is let through, by the kernel too.
  SeccompCall other = getppid_call();
  other.number = SYS_getpid;
  CHECK(run_seccomp_filter(filter, other) == SECCOMP_RET_ALLOW);
}

TEST_CASE("run_seccomp_filter: the rest of what seccomp's checker lets in") {
  const SeccompCall call = getppid_call(5, 0);
  // The data's length, X's too, TXA, NEG, SUB, DIV, LSH with X, JGE, JEQ with X.
  const std::vector<BpfInstruction> filter = {
      stmt(BPF_LDX | BPF_W | BPF_LEN, 0),  // X = 64
      stmt(BPF_MISC | BPF_TXA, 0),         // A = 64
      stmt(BPF_ALU | BPF_NEG, 0),          // A = -64
      stmt(BPF_ALU | BPF_SUB | BPF_K, 0),  // unchanged
      stmt(BPF_ALU | BPF_NEG, 0),          // A = 64
      stmt(BPF_ALU | BPF_DIV | BPF_K, 8),  // A = 8
      stmt(BPF_LDX | BPF_IMM, 33),         // X = 33: shifts take its low five bits
      stmt(BPF_ALU | BPF_LSH | BPF_X, 0),  // A = 16
      jump(BPF_JMP | BPF_JGE | BPF_K, 16, 0, 3),
      stmt(BPF_LDX | BPF_IMM, 16),
      jump(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 1),
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 21),
      stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  CHECK(run_seccomp_filter(filter, call) == (SECCOMP_RET_ERRNO | 21));
  // The arch word.
  const std::vector<BpfInstruction> arch = {stmt(BPF_LD | BPF_W | BPF_ABS, kArch), stmt(BPF_RET | BPF_A, 0)};
  CHECK(run_seccomp_filter(arch, call) == AUDIT_ARCH_X86_64);
  // A division by zero ends the filter with 0: kill the thread.
  const std::vector<BpfInstruction> divide = {stmt(BPF_LDX | BPF_IMM, 0), stmt(BPF_ALU | BPF_DIV | BPF_X, 0),
                                              stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  CHECK(run_seccomp_filter(divide, call) == SECCOMP_RET_KILL_THREAD);
}

TEST_CASE("run_seccomp_filter: what seccomp would not take is unknown") {
  const SeccompCall call = getppid_call();
  using Filter = std::vector<BpfInstruction>;
  CHECK_FALSE(run_seccomp_filter(Filter{}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_LD | BPF_W | BPF_ABS, kNr)}, call));  // off the end
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_LD | BPF_W | BPF_ABS, 64), stmt(BPF_RET | BPF_A, 0)}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_LD | BPF_W | BPF_ABS, 2), stmt(BPF_RET | BPF_A, 0)}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_LD | BPF_H | BPF_ABS, 0), stmt(BPF_RET | BPF_A, 0)}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_ALU | BPF_MOD | BPF_K, 3), stmt(BPF_RET | BPF_A, 0)}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_ST, 16), stmt(BPF_RET | BPF_A, 0)}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{stmt(BPF_JMP | BPF_JA, 1), stmt(BPF_RET | BPF_A, 0)}, call));
  CHECK_FALSE(run_seccomp_filter(Filter{jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), stmt(BPF_RET | BPF_A, 0)}, call));
}

TEST_CASE("seccomp_verdict: every filter runs, the kernel's order of actions decides") {
  using Filter = std::vector<BpfInstruction>;
  auto ret = [](uint32_t action) { return Filter{stmt(BPF_RET | BPF_K, action)}; };
  const SeccompCall call = getppid_call();
  CHECK(stub::process::seccomp_verdict({}, call) == SECCOMP_RET_ALLOW);
  CHECK(stub::process::seccomp_verdict({ret(SECCOMP_RET_ALLOW), ret(SECCOMP_RET_TRAP), ret(SECCOMP_RET_ERRNO | 1)},
                                       call) == SECCOMP_RET_TRAP);
  CHECK(stub::process::seccomp_verdict({ret(SECCOMP_RET_KILL_THREAD), ret(SECCOMP_RET_KILL_PROCESS)}, call) ==
        SECCOMP_RET_KILL_PROCESS);
  CHECK(stub::process::seccomp_verdict({ret(SECCOMP_RET_LOG), ret(SECCOMP_RET_USER_NOTIF)}, call) ==
        SECCOMP_RET_USER_NOTIF);
  // The same action: the newest filter's (the first) data.
  CHECK(stub::process::seccomp_verdict({ret(SECCOMP_RET_ERRNO | 5), ret(SECCOMP_RET_ERRNO | 7)}, call) ==
        (SECCOMP_RET_ERRNO | 5));
  CHECK_FALSE(stub::process::seccomp_verdict({ret(SECCOMP_RET_ALLOW), Filter{}}, call));

  CHECK(stub::process::seccomp_action_harmless(SECCOMP_RET_ALLOW));
  CHECK(stub::process::seccomp_action_harmless(SECCOMP_RET_LOG));
  CHECK(stub::process::seccomp_action_harmless(SECCOMP_RET_ERRNO | 1));
  CHECK(stub::process::seccomp_action_harmless(SECCOMP_RET_TRAP | 9));
  CHECK(stub::process::seccomp_action_harmless(SECCOMP_RET_TRACE));
  CHECK_FALSE(stub::process::seccomp_action_harmless(SECCOMP_RET_KILL_PROCESS));
  CHECK_FALSE(stub::process::seccomp_action_harmless(SECCOMP_RET_KILL_THREAD));
  CHECK_FALSE(stub::process::seccomp_action_harmless(SECCOMP_RET_USER_NOTIF));
  CHECK_FALSE(stub::process::seccomp_action_harmless(0x12340000));  // the kernel takes it as a kill
}

TEST_CASE("seccomp_answer reads a stopped tracee's filters and asks them about btstub's call") {
  using stub::process::SeccompAnswer;
  // Kills on clone(CLONE_PARENT) only, and on getppid at a pc past 0x1000
  // (seccomp_data.instruction_pointer: after the `syscall`).
  const std::vector<BpfInstruction> filter = {
      stmt(BPF_LD | BPF_W | BPF_ABS, kNr),
      jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
      stmt(BPF_LD | BPF_W | BPF_ABS, kArg0),
      jump(BPF_JMP | BPF_JEQ | BPF_K, 0x8000 /* CLONE_PARENT */, 4, 5),
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 3),
      stmt(BPF_LD | BPF_W | BPF_ABS, 8),  // instruction_pointer, low word
      jump(BPF_JMP | BPF_JEQ | BPF_K, 0x1002, 0, 1),
      stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  REQUIRE(run_seccomp_filter(filter, getppid_call()) == SECCOMP_RET_ALLOW);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    sock_fprog prog{static_cast<unsigned short>(filter.size()),
                    reinterpret_cast<sock_filter*>(const_cast<BpfInstruction*>(filter.data()))};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      ::_exit(2);
    }
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSTOPPED(status));
  using stub::process::seccomp_answer;
  CHECK(seccomp_answer(child, SYS_clone, {0x8000, 0, 0, 0, 0, 0}, 0x5000) == SeccompAnswer::Harmful);
  CHECK(seccomp_answer(child, SYS_clone, {0x11, 0, 0, 0, 0, 0}, 0x5000) == SeccompAnswer::Harmless);
  CHECK(seccomp_answer(child, SYS_mmap, {0, 4096, 3, 0x22, ~0ull, 0}, 0x5000) == SeccompAnswer::Harmless);
  CHECK(seccomp_answer(child, SYS_getppid, {}, 0x1000) == SeccompAnswer::Harmful);
  CHECK(seccomp_answer(child, SYS_getppid, {}, 0x2000) == SeccompAnswer::Harmless);
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  // No filter at all: this process.
  CHECK(seccomp_answer(::getpid(), SYS_clone, {0x8000, 0, 0, 0, 0, 0}, 0x5000) == SeccompAnswer::Harmless);
}

}  // namespace test_seccomp_filter
