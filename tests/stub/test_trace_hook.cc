// The TraceHook contract against real programs (tests/programs): trace
// stops in debug-register slot 3 absorbed by the hook, and continues that the
// hook turns into single steps.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "stub/process/ptrace_process.h"

namespace test_trace_hook {  // this file's own names, apart in a unity build

using protocol::Amd64Reg;
using stub::process::ProcessEvent;
using stub::process::PtraceProcess;
using stub::process::StepKind;
using stub::process::TracedStop;
using stub::process::TracedThreadControl;
using stub::process::TraceVerdict;

namespace {

std::string program(const std::string& name) { return std::string(PROGRAMS_DIR) + "/" + name; }

// Offset of a function symbol in the file, from nm.
uint64_t symbol_offset(const std::string& path, const std::string& symbol) {
  std::string command = "nm " + path;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char line[512];
  uint64_t found = 0;
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    unsigned long long value = 0;
    char type = 0;
    char name[400];
    if (std::sscanf(line, "%llx %c %399s", &value, &type, name) == 3 && name == symbol) found = value;
  }
  ::pclose(pipe);
  REQUIRE(found != 0);
  return found;
}

// Where the kernel mapped the start of the executable (ASLR is off, but
// the test does not rely on the usual address).
uint64_t load_base(pid_t pid, const std::string& path) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long start = 0, end = 0, offset = 0;
    char perms[8];
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx", &start, &end, perms, &offset) == 4 && offset == 0 &&
        line.find(path) != std::string::npos) {
      return start;
    }
  }
  FAIL("executable not mapped");
  return 0;
}

std::unique_ptr<PtraceProcess> launch(const std::string& path) {
  stub::process::LaunchOptions options;
  options.argv = {path};
  auto process = PtraceProcess::launch(options);
  INFO((process ? std::string() : process.error().message));
  REQUIRE(process.ok());
  return std::move(*process);
}

uint64_t pc_of(PtraceProcess& process) {
  auto regs = process.read_registers(process.pid());
  REQUIRE(regs.ok());
  return regs->get_u64(Amd64Reg::rip);
}

ProcessEvent wait_for(PtraceProcess& process) {
  auto event = process.wait_event();
  INFO((event ? std::string() : event.error().message));
  REQUIRE(event.ok());
  return *event;
}

// Arms a trace stop at `target` before every resume and absorbs its hits.
class CountingHook : public stub::process::TraceHook {
 public:
  explicit CountingHook(uint64_t target) : target_(target) {}
  bool traces(pid_t) const override { return true; }
  StepKind before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int) override {
    ++resumes;
    if (!control.set_trace_stop(tid, target_)) ++errors;
    return requested;
  }
  TraceVerdict on_stop(TracedThreadControl& control, const TracedStop& stop) override {
    if (!stop.trace_stop_hit) return TraceVerdict::Report;
    ++hits;
    if (stop.pc != target_) ++wrong_pc;
    auto regs = control.read_registers(stop.tid);
    if (!regs || regs->get_u64(Amd64Reg::rip) != target_) ++wrong_pc;
    return TraceVerdict::Continue;
  }
  void on_thread_created(pid_t, pid_t) override {}
  void on_thread_exited(pid_t) override {}
  void on_exec(pid_t) override {}
  bool uses_debug_register() const override { return true; }

  int hits = 0, resumes = 0, errors = 0, wrong_pc = 0;

 private:
  uint64_t target_;
};

// Runs every continue as single steps and counts the steps it sees.
class SteppingHook : public stub::process::TraceHook {
 public:
  bool traces(pid_t) const override { return true; }
  StepKind before_resume(TracedThreadControl&, pid_t, StepKind, int) override { return StepKind::SingleStep; }
  TraceVerdict on_stop(TracedThreadControl&, const TracedStop& stop) override {
    if (stop.single_stepped) ++steps;
    return TraceVerdict::Report;
  }
  void on_thread_created(pid_t, pid_t) override {}
  void on_thread_exited(pid_t) override {}
  void on_exec(pid_t) override {}
  int steps = 0;
};

}  // namespace

TEST_CASE("a trace stop in slot 3 fires at each call and the hook absorbs it", "[ptrace][trace]") {
  if (!PtraceProcess::debug_registers_work()) {
    WARN("SKIPPED: debug registers do not trap on this machine (hypervisor); trace stops cannot fire");
    return;
  }
  std::string path = program("basic_O0");
  auto process = launch(path);
  uint64_t factorial = load_base(process->pid(), path) + symbol_offset(path, "factorial");
  CountingHook hook(factorial);
  process->set_trace_hook(&hook);
  REQUIRE(process->resume(process->pid(), StepKind::Continue, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Exited);
  CHECK(event.exit_code == 11);  // 10 + argc: basic ran to its end undisturbed
  CHECK(hook.hits == 5);         // factorial(5) recurses down to 1
  CHECK(hook.resumes == 1);      // absorbed stops continue without before_resume
  CHECK(hook.errors == 0);
  CHECK(hook.wrong_pc == 0);
}

namespace {

// Inserts `fit` 8-byte write watchpoints side by side (each must succeed)
// and returns the result of one more.
constexpr uint64_t kWatched = 0x555555558000;
btstub::Expected<void> one_watch_past(PtraceProcess& process, int fit) {
  using protocol::BreakpointType;
  for (int i = 0; i < fit; ++i) REQUIRE(process.insert_hw_point(BreakpointType::WriteWatch, kWatched + 8 * i, 8).ok());
  return process.insert_hw_point(BreakpointType::WriteWatch, kWatched + 8 * fit, 8);
}

}  // namespace

TEST_CASE("user watchpoints cannot take the slot a tracer holds", "[ptrace][trace]") {
  if (!PtraceProcess::debug_registers_work()) {
    WARN("SKIPPED: debug registers do not trap on this machine (hypervisor)");
    return;
  }
  auto process = launch(program("basic_O0"));
  CountingHook hook(0x1000);
  process->set_trace_hook(&hook);
  auto fourth = one_watch_past(*process, 3);
  REQUIRE_FALSE(fourth.ok());
  CHECK_THAT(fourth.error().message, Catch::Contains("debug register"));
  process->set_trace_hook(nullptr);
  CHECK(process->insert_hw_point(protocol::BreakpointType::WriteWatch, kWatched + 24, 8).ok());
}

TEST_CASE("a hook without debug-register stops leaves all four slots to the client", "[ptrace][trace]") {
  if (!PtraceProcess::debug_registers_work()) {
    WARN("SKIPPED: debug registers do not trap on this machine (hypervisor)");
    return;
  }
  auto process = launch(program("basic_O0"));
  SteppingHook hook;  // stands for the int3 tracer: no set_trace_stop
  process->set_trace_hook(&hook);
  REQUIRE_FALSE(one_watch_past(*process, 4).ok());
}

TEST_CASE("a hook that turns continues into steps sees every instruction", "[ptrace][trace]") {
  std::string path = program("basic_O0");
  uint64_t offset_fact = symbol_offset(path, "factorial");
  uint64_t offset_add = symbol_offset(path, "add_one");
  auto count_steps = [&](bool with_hook) {
    auto process = launch(path);
    uint64_t base = load_base(process->pid(), path);
    pid_t pid = process->pid();
    REQUIRE(process->insert_breakpoint(base + offset_fact).ok());
    REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
    REQUIRE(wait_for(*process).software_breakpoint);
    REQUIRE(process->remove_breakpoint(base + offset_fact).ok());
    REQUIRE(process->insert_breakpoint(base + offset_add).ok());
    int steps = 0;
    if (with_hook) {
      SteppingHook hook;
      process->set_trace_hook(&hook);
      REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
      auto event = wait_for(*process);
      CHECK(event.software_breakpoint);
      CHECK_FALSE(event.single_stepped);
      steps = hook.steps;
      process->set_trace_hook(nullptr);
    } else {
      while (pc_of(*process) != base + offset_add) {
        REQUIRE(process->resume(pid, StepKind::SingleStep, 0).ok());
        REQUIRE(wait_for(*process).single_stepped);
        ++steps;
      }
    }
    CHECK(pc_of(*process) == base + offset_add);
    // Both runs end with the program undisturbed.
    REQUIRE(process->remove_breakpoint(base + offset_add).ok());
    REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
    auto end = wait_for(*process);
    CHECK(end.kind == ProcessEvent::Kind::Exited);
    CHECK(end.exit_code == 11);
    return steps;
  };
  int plain = count_steps(false);
  int hooked = count_steps(true);
  CHECK(plain > 50);
  CHECK(hooked == plain);
}

TEST_CASE("the debug-register probe agrees with a real watch on this machine", "[ptrace][trace]") {
  // Whatever the machine, the probe must not hang or leave a child behind,
  // and must give the same answer twice.
  bool first = PtraceProcess::debug_registers_work();
  CHECK(PtraceProcess::debug_registers_work() == first);
  int status = 0;
  CHECK(::waitpid(-1, &status, WNOHANG | __WALL) <= 0);
}

namespace {

// Arms the tracer's int3 (set_trace_breakpoint) at `target`; at each hit it
// asks for the real instruction to be stepped with the int3 in place, which
// the process layer does with the int3 lifted and other threads held.
class Int3Hook : public stub::process::TraceHook {
 public:
  Int3Hook(uint64_t target, bool traced) : target_(target), traced_(traced) {}
  bool traces(pid_t) const override { return traced_; }
  StepKind before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int) override {
    if (!control.set_trace_breakpoint(tid, target_)) ++errors;
    return requested;
  }
  TraceVerdict on_stop(TracedThreadControl& control, const TracedStop& stop) override {
    if (stop.single_stepped && !stop.trace_stop_hit) {
      ++steps;
      if (stop.pc == target_) ++wrong_pc;  // the step ran the real instruction
      return TraceVerdict::Continue;
    }
    if (!stop.trace_stop_hit || stop.software_breakpoint) return TraceVerdict::Report;
    ++hits;
    if (stop.pc != target_) ++wrong_pc;
    auto bytes = control.read_memory(target_, 1);
    if (!bytes || (*bytes)[0] == 0xcc) ++errors;  // the int3 is hidden
    return TraceVerdict::SingleStep;
  }
  bool pass_trace_breakpoint(TracedThreadControl&, pid_t) override {
    ++passes;
    return false;  // cannot emulate: the process layer steps it
  }
  void on_thread_created(pid_t, pid_t) override {}
  void on_thread_exited(pid_t) override {}
  void on_exec(pid_t) override {}

  int hits = 0, steps = 0, passes = 0, errors = 0, wrong_pc = 0;

 private:
  uint64_t target_;
  bool traced_;
};

}  // namespace

TEST_CASE("the tracer's int3 is hidden, reported as a trace stop and stepped in place", "[ptrace][trace]") {
  std::string path = program("basic_O0");
  auto process = launch(path);
  uint64_t factorial = load_base(process->pid(), path) + symbol_offset(path, "factorial");
  auto original = process->read_memory(factorial, 1);
  REQUIRE(original.ok());
  Int3Hook hook(factorial, true);
  process->set_trace_hook(&hook);
  REQUIRE(process->resume(process->pid(), StepKind::Continue, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Exited);
  CHECK(event.exit_code == 11);  // basic ran to its end undisturbed
  CHECK(hook.hits == 5);         // factorial(5) recurses down to 1
  CHECK(hook.steps == 5);
  CHECK(hook.errors == 0);
  CHECK(hook.wrong_pc == 0);
}

TEST_CASE("the tracer's int3s are counted by thread and shared with user breakpoints", "[ptrace][trace]") {
  std::string path = program("basic_O0");
  auto process = launch(path);
  const pid_t pid = process->pid();
  uint64_t factorial = load_base(pid, path) + symbol_offset(path, "factorial");
  auto original = process->read_memory(factorial, 1);
  REQUIRE(original.ok());
  REQUIRE((*original)[0] != 0xcc);
  REQUIRE(process->set_trace_breakpoint(pid, factorial).ok());
  CHECK(process->has_trace_breakpoint(factorial));
  CHECK(process->read_memory(factorial, 1).value() == *original);
  // A user breakpoint over it, then removed: the tracer's int3 stays.
  REQUIRE(process->insert_breakpoint(factorial).ok());
  REQUIRE(process->remove_breakpoint(factorial).ok());
  CHECK(process->has_trace_breakpoint(factorial));
  REQUIRE(process->set_trace_breakpoint(pid, std::nullopt).ok());
  CHECK_FALSE(process->has_trace_breakpoint(factorial));
  CHECK(process->read_memory(factorial, 1).value() == *original);
  // Without a hook nobody traces: the process layer steps every thread
  // past the int3 itself, and the program ends undisturbed.
  REQUIRE(process->set_trace_breakpoint(pid, factorial).ok());
  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Exited);
  CHECK(event.exit_code == 11);
}

TEST_CASE("an untraced thread on the tracer's int3 is stepped past it", "[ptrace][trace]") {
  std::string path = program("basic_O0");
  auto process = launch(path);
  const pid_t pid = process->pid();
  uint64_t factorial = load_base(pid, path) + symbol_offset(path, "factorial");
  Int3Hook hook(factorial, false);
  process->set_trace_hook(&hook);
  REQUIRE(process->set_trace_breakpoint(pid, factorial).ok());
  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Exited);
  CHECK(event.exit_code == 11);
  CHECK(hook.passes == 5);
  CHECK(hook.hits == 0);  // never shown to the hook as its own
}

}  // namespace test_trace_hook
