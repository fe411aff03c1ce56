// SoftwareTracer with TraceStops::Breakpoint: int3 trace stops at which the
// transfer is emulated (software_tracer_emulate.cc), against the scripted
// process layer of software_tracer_fake.h (code listing in
// test_software_tracer.cc).
#include <catch2/catch.hpp>

#include "software_tracer_fake.h"

namespace test_software_tracer_emulate {  // this file's own names, apart in a unity build

using decoder::Branch;
using fake::branches;
using stub::process::StepKind;
using stub::process::TraceVerdict;
using namespace fake;

namespace {

constexpr pid_t kTid = 100;
constexpr uint64_t kLoopInsn = 0x2000;  // loop 0x2000 (e2 fe), then unmapped

struct Fixture {
  Control control;
  std::unique_ptr<stub::tracing::SoftwareTracer> tracer;
  Driver run;
  explicit Fixture(uint64_t pc = kStart) : run{make(), control, kTid} {
    control.set_reg(kTid, Amd64Reg::rip, pc);
    control.set_reg(kTid, Amd64Reg::eflags, kZf);
    control.set_reg(kTid, Amd64Reg::rcx, 0x55);
    control.push_return(kTid, kBack);
    control.map(kStack - 0x100, 0x100);  // room below the return slot
    REQUIRE(tracer->enable(kTid).ok());
  }
  stub::tracing::SoftwareTracer& make() {
    tracer = breakpoint_tracer();
    return *tracer;
  }
  const decoder::BlockTrace& trace() { return *tracer->trace(kTid); }
  uint64_t reg(Amd64Reg r) { return control.regs[kTid].get_u64(r); }
};

}  // namespace

TEST_CASE("int3 trace stops: transfers are emulated and stored at once") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kJne);
  REQUIRE(f.control.arm_calls == 0);  // no debug register is used

  // jne not taken: rip moves to the call, which is emulated in the same
  // stop: the return address is pushed and the thread goes on in func,
  // caught next at its ret.
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.reg(Amd64Reg::rip) == kFunc);
  REQUIRE(f.reg(Amd64Reg::rsp) == kStack - 8);
  REQUIRE(f.control.read_u64(kStack - 8) == kCall + 5);
  REQUIRE(f.control.int3[kTid] == kRet);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});

  // ret pops back; `back` is itself an indirect jmp through ptr, to tgt,
  // whose block ends in a syscall: no int3 there, the block is stepped.
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);
  REQUIRE(f.reg(Amd64Reg::rip) == kTgt);
  REQUIRE(f.reg(Amd64Reg::rsp) == kStack);
  REQUIRE(f.reg(Amd64Reg::rcx) == 0x55);
  REQUIRE(branches(f.trace()) ==
          std::vector<Branch>{{kCall, kFunc}, {kRet, kCall + 5}, {kCall + 5, kTgt}});
  // The syscall returns in line: no branch; the nop and ud2 are stepped too.
  REQUIRE(f.run.step_done_at(kTgtNop) == TraceVerdict::SingleStep);
  REQUIRE(f.run.step_done_at(kUd2) == TraceVerdict::SingleStep);
  REQUIRE(f.run.signal_at(kUd2, SIGILL) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 3);
  REQUIRE(f.tracer->stats().emulated == 4);
}

TEST_CASE("int3 trace stops: a taken jcc back into its own block stops once per round") {
  Fixture f(kLoop);
  f.control.set_reg(kTid, Amd64Reg::eflags, 0);  // ZF clear: jne taken
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kLoopJne);
  REQUIRE(f.run.trace_stop_at(kLoopJne) == TraceVerdict::Continue);
  REQUIRE(f.reg(Amd64Reg::rip) == kLoop);
  REQUIRE(f.run.trace_stop_at(kLoopJne) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kLoopJne, kLoop}, {kLoopJne, kLoop}});
  f.control.set_reg(kTid, Amd64Reg::eflags, kZf);  // the dec reached zero
  REQUIRE(f.run.trace_stop_at(kLoopJne) == TraceVerdict::SingleStep);  // nop, then the syscall block
  REQUIRE(f.reg(Amd64Reg::rip) == kLoopNop);
  REQUIRE(f.trace().size() == 2);
}

TEST_CASE("int3 trace stops: loop decrements rcx and chains within one stop") {
  Fixture f(kLoopInsn);
  f.control.memory[kLoopInsn] = 0xe2;
  f.control.memory[kLoopInsn + 1] = 0xfe;
  f.control.set_reg(kTid, Amd64Reg::rcx, 3);
  // At the loop itself: taken twice (rcx 3 -> 2 -> 1), then falls through
  // (-> 0) into unmapped code, which is stepped to see what happens.
  REQUIRE(f.run.resume() == StepKind::SingleStep);
  REQUIRE(f.reg(Amd64Reg::rcx) == 0);
  REQUIRE(f.reg(Amd64Reg::rip) == kLoopInsn + 2);
  REQUIRE(f.reg(Amd64Reg::rsp) == kStack);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kLoopInsn, kLoopInsn}, {kLoopInsn, kLoopInsn}});
}

TEST_CASE("int3 trace stops: a call that would fault runs for real") {
  Fixture f(kCall);
  f.control.set_reg(kTid, Amd64Reg::rsp, 0x9000);  // nothing mapped below
  REQUIRE(f.run.resume() == StepKind::SingleStep);
  REQUIRE(f.reg(Amd64Reg::rip) == kCall);  // nothing emulated
  REQUIRE(f.reg(Amd64Reg::rsp) == 0x9000);
  REQUIRE(f.trace().size() == 0);
  // The real call faults: nothing ran, nothing stored.
  REQUIRE(f.run.signal_at(kCall, SIGSEGV) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 0);
}

TEST_CASE("int3 trace stops: a ret whose slot cannot be read runs for real") {
  Fixture f(kRet);
  f.control.set_reg(kTid, Amd64Reg::rsp, 0x9000);
  REQUIRE(f.run.resume() == StepKind::SingleStep);
  REQUIRE(f.reg(Amd64Reg::rip) == kRet);
  REQUIRE(f.run.signal_at(kRet, SIGSEGV) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 0);
}

TEST_CASE("int3 trace stops: other threads are moved past the int3 without a trace") {
  Fixture f;
  constexpr pid_t kOther = 200;
  f.control.set_reg(kOther, Amd64Reg::rip, kCall);
  f.control.set_reg(kOther, Amd64Reg::rsp, kStack);
  REQUIRE(!f.tracer->traces(kOther));
  REQUIRE(f.tracer->pass_trace_breakpoint(f.control, kOther));
  REQUIRE(f.control.regs[kOther].get_u64(Amd64Reg::rip) == kFunc);
  REQUIRE(f.control.regs[kOther].get_u64(Amd64Reg::rsp) == kStack - 8);
  REQUIRE(f.tracer->trace(kOther) == nullptr);
  REQUIRE(f.trace().size() == 0);
  // Not a transfer (or one that would fault): the process layer must step it.
  f.control.set_reg(kOther, Amd64Reg::rip, kStart);
  REQUIRE(!f.tracer->pass_trace_breakpoint(f.control, kOther));
  f.control.set_reg(kOther, Amd64Reg::rip, kCall);
  f.control.set_reg(kOther, Amd64Reg::rsp, 0x9000);
  REQUIRE(!f.tracer->pass_trace_breakpoint(f.control, kOther));
}

TEST_CASE("int3 trace stops: a disabled thread's int3 is dropped and the thread passed") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kJne);
  REQUIRE(f.tracer->disable(kTid).ok());  // no control set: disarmed at the next hook call
  // It still hits the int3 it had: swallowed, emulated, never shown.
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.control.int3[kTid] == std::nullopt);
  REQUIRE(f.reg(Amd64Reg::rip) == kCall);
}

TEST_CASE("int3 trace stops: a user breakpoint at the transfer is the client's stop") {
  Fixture f;
  f.control.user_breakpoints.insert(kCall);
  REQUIRE(f.run.resume() == StepKind::Continue);
  // jne falls through onto the call, which has the client's int3: nothing
  // is emulated there; ours sits under it.
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.reg(Amd64Reg::rip) == kCall);
  REQUIRE(f.control.int3[kTid] == kCall);
  stub::process::TracedStop stop;
  stop.tid = kTid;
  stop.signal = SIGTRAP;
  stop.software_breakpoint = true;
  stop.trace_stop_hit = true;
  REQUIRE(f.run.stop_at(kCall, stop) == TraceVerdict::Report);
  // The client continues: the process layer steps the call (lifted, others held).
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.step_done_at(kFunc) == TraceVerdict::Report);  // the process layer's own step
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
}

TEST_CASE("stepping: a step over cpuid that lands one instruction late is no branch, a signal's is") {
  Control control;
  constexpr uint64_t kCpuid = 0x3000;
  const std::vector<uint8_t> code = {0x0f, 0xa2, 0x90, 0x90, 0x90};  // cpuid; nop; nop; nop
  for (std::size_t i = 0; i < code.size(); ++i) control.memory[kCpuid + i] = code[i];
  auto made = stub::tracing::SoftwareTracer::create({}, false, stub::tracing::TraceStops::SingleStep);
  REQUIRE(made.ok());
  auto& tracer = **made;
  Driver run{tracer, control, kTid};
  control.set_reg(kTid, Amd64Reg::rip, kCpuid);
  REQUIRE(tracer.enable(kTid).ok());
  REQUIRE(run.resume() == StepKind::SingleStep);
  // Some hypervisors lose the trap after cpuid: the step ends after the nop.
  REQUIRE(run.step_done_at(kCpuid + 3) == TraceVerdict::SingleStep);
  REQUIRE(tracer.trace(kTid)->size() == 0);
  // A signal delivered by a step lands in its handler: that is a branch.
  REQUIRE(run.signal_at(kCpuid + 3, SIGUSR1) == TraceVerdict::Report);
  REQUIRE(run.resume(StepKind::Continue, SIGUSR1) == StepKind::SingleStep);
  REQUIRE(run.step_done_at(kStart) == TraceVerdict::SingleStep);
  REQUIRE(branches(*tracer.trace(kTid)) == std::vector<Branch>{{kCpuid + 3, kStart}});
}

// The debug registers see only what the CPU reads and writes: a transfer
// touching a watched byte is run (a step, the int3 lifted by the process
// layer), so the client's watchpoint fires. Before, `watch -l` on a stack
// slot missed every call that pushed its return address there.
TEST_CASE("int3 trace stops: a transfer touching watched memory is run, not emulated") {
  SECTION("a call pushing into a watched slot") {
    Fixture f;
    f.control.watches = {{kStack - 8, kStack}};
    REQUIRE(f.run.resume() == StepKind::Continue);
    REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::SingleStep);  // jne emulated, the call stepped
    REQUIRE(f.reg(Amd64Reg::rip) == kCall);
    REQUIRE(f.control.read_u64(kStack - 8) == 0);  // nothing pushed by the tracer
    f.control.set_reg(kTid, Amd64Reg::rsp, kStack - 8);
    REQUIRE(f.run.step_done_at(kFunc) != TraceVerdict::Report);
    REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
  }
  SECTION("a return reading a watched slot") {
    Fixture f(kFunc);
    f.control.watches = {{kStack + 4, kStack + 5}};
    REQUIRE(f.run.resume() == StepKind::Continue);
    REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);
    REQUIRE(f.reg(Amd64Reg::rip) == kRet);
    REQUIRE(f.trace().size() == 0);
  }
  SECTION("an indirect jmp reading a watched pointer") {
    Fixture f(kBack);
    f.control.watches = {{kPtr, kPtr + 8}};
    REQUIRE(f.run.resume() == StepKind::SingleStep);  // the jmp under the pc: stepped
    REQUIRE(f.reg(Amd64Reg::rip) == kBack);
    REQUIRE(f.trace().size() == 0);
  }
  SECTION("watches elsewhere change nothing") {
    Fixture f;
    f.control.watches = {{kStack - 16, kStack - 8}, {kStack + 8, kStack + 16}};
    REQUIRE(f.run.resume() == StepKind::Continue);
    REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
    REQUIRE(f.reg(Amd64Reg::rip) == kFunc);
    REQUIRE(f.control.read_u64(kStack - 8) == kCall + 5);
  }
}

// A hardware breakpoint fires only where the CPU is about to run the
// instruction: a return landing on a transfer with one is not taken on in
// the same stop; the thread runs from the landing (with an int3 there for
// afterwards). Before, hbreak on the call right after a call never fired.
TEST_CASE("int3 trace stops: an emulation landing on a hardware breakpoint ends the chain there") {
  Fixture f(kFunc);
  f.control.hw_breakpoints = {kBack};
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::Continue);
  REQUIRE(f.reg(Amd64Reg::rip) == kBack);
  REQUIRE(f.control.int3[kTid] == kBack);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kRet, kBack}});
  // Where the thread stopped by itself the breakpoint fired first: the
  // transfer under it is emulated as always.
  REQUIRE(f.run.trace_stop_at(kBack) == TraceVerdict::SingleStep);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kRet, kBack}, {kBack, kTgt}});
}

}  // namespace test_software_tracer_emulate
