// SoftwareTracer against a scripted process layer (software_tracer_fake.h).
// The code under trace, assembled at 0x1000:
//   _start: mov ecx,2; xor eax,eax; test eax,eax; jne _start; call func
//   back:   jmp [rip+ptr]
//   loop:   dec ecx; jne loop; nop
//   tgt:    syscall; nop; ud2
//   func:   mov eax,1; ret
//   ptr:    .quad tgt
#include <sched.h>
#include <csignal>

#include <catch2/catch.hpp>

#include "decoder/instruction_history.h"
#include "software_tracer_fake.h"

namespace test_software_tracer {  // this file's own names, apart in a unity build

using decoder::Block;
using decoder::Branch;
using fake::branches;
using stub::process::StepKind;
using stub::process::TraceVerdict;
using namespace fake;

namespace {

constexpr pid_t kTid = 100;

std::unique_ptr<stub::tracing::SoftwareTracer> make_tracer(stub::tracing::TraceConfig config = {}, bool all = false) {
  auto tracer = stub::tracing::SoftwareTracer::create(config, all);
  REQUIRE(tracer.ok());
  return std::move(tracer).value();
}

// Starts tracing kTid at `pc` with ZF set (so `jne _start` falls through).
struct Fixture {
  Control control;
  std::unique_ptr<stub::tracing::SoftwareTracer> tracer;
  Driver run;
  explicit Fixture(stub::tracing::TraceConfig config = {}, uint64_t pc = kStart)
      : tracer(make_tracer(config)), run{*tracer, control, kTid} {
    control.set_reg(kTid, Amd64Reg::rip, pc);
    control.set_reg(kTid, Amd64Reg::eflags, kZf);
    control.push_return(kTid, kBack);
    REQUIRE(tracer->enable(kTid).ok());
  }
  const decoder::BlockTrace& trace() { return *tracer->trace(kTid); }
};

}  // namespace

TEST_CASE("software tracer: one stop per block through jcc, call, ret and an indirect jmp") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.armed() == kJne);  // first transfer of the first block
  // jne not taken (ZF set): no branch, the next block ends at the call.
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.armed() == kCall);
  REQUIRE(f.trace().size() == 0);
  // call: pending until the thread is seen past it; armed at func's ret.
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  REQUIRE(f.run.armed() == kRet);
  REQUIRE(f.trace().size() == 0);
  // ret reads its target from memory (another thread could rewrite the
  // slot before it runs): the tracer takes it at the stop, stored at once.
  // It goes to `back`, whose block is `jmp [ptr]`, from memory too: taken
  // as well, to tgt, a syscall, which is stepped.
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);
  REQUIRE(f.control.pc(kTid) == kTgt);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}, {kRet, kBack}, {kBack, kTgt}});
  // It returns in line: no branch.
  REQUIRE(f.run.step_done_at(kTgtNop) == TraceVerdict::Continue);
  REQUIRE(f.run.armed() == kUd2);
  // ud2 faults on its own: let it.
  REQUIRE(f.run.trace_stop_at(kUd2) == TraceVerdict::Continue);
  REQUIRE(f.run.signal_at(kUd2, SIGILL) == TraceVerdict::Report);

  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}, {kRet, kBack}, {kBack, kTgt}});
  auto blocks = f.trace().blocks(f.trace().first_sequence(), kUd2);
  REQUIRE(blocks == std::vector<Block>{{kStart, kCall}, {kFunc, kRet}, {kBack, kBack}, {kTgt, kUd2}});
  // The blocks decode back to exactly the instructions that ran.
  auto decoder = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code(0x1000, kCode.data(), kCode.size());
  auto history = decoder::instruction_history(decoder, code, blocks);
  REQUIRE(history.ok());
  REQUIRE(*history == std::vector<uint64_t>{0x1000, 0x1005, 0x1007, kJne, kCall, kFunc, kRet, kBack, kTgt,
                                            kTgtNop, kUd2});
  auto stats = f.tracer->stats();
  REQUIRE(stats.trace_stops == 4);
  REQUIRE(stats.steps == 1);
  REQUIRE(stats.emulated == 2);
  REQUIRE(stats.branches == 3);
}

TEST_CASE("software tracer: a taken jcc back to its own block is stepped, not guessed") {
  Fixture f({}, kLoop);
  f.control.set_reg(kTid, Amd64Reg::eflags, 0);  // ZF clear: jne taken
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.armed() == kLoopJne);
  // The target's block ends at this same jne: a signal stop at the jne could
  // not tell "not run yet" from "went round once", so the tracer steps.
  REQUIRE(f.run.trace_stop_at(kLoopJne) == TraceVerdict::SingleStep);
  REQUIRE(f.trace().size() == 0);
  REQUIRE(f.run.step_done_at(kLoop) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kLoopJne, kLoop}});
  REQUIRE(f.run.armed() == kLoopJne);
  f.control.set_reg(kTid, Amd64Reg::eflags, kZf);  // last round: falls through
  REQUIRE(f.run.trace_stop_at(kLoopJne) == TraceVerdict::Continue);
  REQUIRE(f.run.armed() == kTgt);
  REQUIRE(f.trace().size() == 1);
}

TEST_CASE("software tracer: a branch under a user breakpoint is not recorded until it runs") {
  Fixture f;
  f.control.user_breakpoints.insert(kCall);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  // The int3 at the call will stop the thread before the call runs.
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  REQUIRE(f.run.breakpoint_at(kCall) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 0);
  // The process layer steps off the breakpoint (its own step: reported to it).
  REQUIRE(f.run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(kFunc) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.armed() == kRet);
}

TEST_CASE("software tracer: a signal stop before the branch ran records nothing") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  // SIGUSR1 arrives as the thread resumes: it is still at the call.
  REQUIRE(f.run.signal_at(kCall, SIGUSR1) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 0);
  // Delivered with the resume: stepped into the handler (here: tgt), which is
  // recorded as a branch from the interrupted pc.
  REQUIRE(f.run.resume(StepKind::Continue, SIGUSR1) == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(kTgt) == TraceVerdict::SingleStep);  // tgt is a syscall: stepped
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kTgt}});
  // rt_sigreturn takes the thread back to the call: a branch from the syscall.
  REQUIRE(f.run.step_done_at(kCall) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kTgt}, {kTgt, kCall}});
  REQUIRE(f.run.armed() == kRet);  // the call is planned afresh
}

TEST_CASE("software tracer: a signal stop after the branch ran commits it") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  REQUIRE(f.run.signal_at(kRet, SIGINT) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
  // A signal the client suppresses: plain continue; the ret and the jmp
  // after it are taken at once, the syscall they reach is stepped.
  REQUIRE(f.run.resume() == StepKind::SingleStep);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}, {kRet, kBack}, {kBack, kTgt}});
}

TEST_CASE("software tracer: a signal with no handler steps the instruction in line") {
  Fixture f({}, kFunc);
  REQUIRE(f.run.resume(StepKind::Continue, SIGCHLD) == StepKind::SingleStep);
  // No branch from the step; the ret it reaches is taken (and the jmp after).
  REQUIRE(f.run.step_done_at(kRet) == TraceVerdict::SingleStep);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kRet, kBack}, {kBack, kTgt}});
}

TEST_CASE("software tracer: the client's stepi is reported and its branch recorded") {
  Fixture f({}, kRet);
  REQUIRE(f.run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(kBack) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kRet, kBack}});
  // A stepi over a non-branch records nothing.
  f.control.set_reg(kTid, Amd64Reg::rip, kStart);
  REQUIRE(f.run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(0x1005) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 1);
}

TEST_CASE("software tracer: the client's steps onto the armed transfer and over it") {
  // The trace stop is armed at the call; the client then steps up to it.
  // A debug-register stop at the pc fires before the instruction runs, so
  // the tracer must take it away before the client steps the call itself
  // (seen on real hardware as the call recorded twice: 0x100b -> 0x100b).
  Fixture f({}, 0x1005);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.armed() == kJne);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.armed() == kCall);
  REQUIRE(f.run.breakpoint_at(0x1005 + 2) == TraceVerdict::Report);  // the client's own stop at `test`
  REQUIRE(f.run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(kJne) == TraceVerdict::Report);
  REQUIRE(f.run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(kCall) == TraceVerdict::Report);
  REQUIRE(f.run.armed() == kCall);  // still armed where the thread now stands
  REQUIRE(f.run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(f.run.armed() == std::nullopt);
  REQUIRE(f.run.step_done_at(kFunc) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
}

TEST_CASE("software tracer: a thread kept stopped after a trace stop replans on resume") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  // The process layer stopped all threads before this one resumed (no
  // on_stop for its SIGSTOP): the call did not run.
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.trace().size() == 0);
  REQUIRE(f.run.armed() == kRet);
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}, {kRet, kBack}, {kBack, kTgt}});
}

TEST_CASE("software tracer: a full buffer under the stop policy stops before the branch") {
  stub::tracing::TraceConfig config;
  config.buffer_bytes = 24;  // one record
  config.overflow = decoder::OverflowPolicy::Stop;
  Fixture f(config);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::ShowStop);  // call stored; ret does not fit
  REQUIRE(f.tracer->stopped_full(kTid));
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
  // Resumed anyway: the thread runs on untraced, its trace kept as it was.
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE_FALSE(f.tracer->stopped_full(kTid));
  REQUIRE(f.run.armed() == std::nullopt);
  REQUIRE(f.trace().size() == 1);
}

TEST_CASE("software tracer: a full buffer under drop-oldest keeps the newest branches") {
  stub::tracing::TraceConfig config;
  config.buffer_bytes = 48;  // two records
  Fixture f(config);
  REQUIRE(f.tracer->thread_config(kTid)->buffer_bytes == 48);
  REQUIRE(f.trace().capacity() == 2);
  REQUIRE(f.run.resume() == StepKind::Continue);
  for (uint64_t pc : {kJne, kCall}) REQUIRE(f.run.trace_stop_at(pc) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);  // ret and jmp taken, syscall stepped
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kRet, kBack}, {kBack, kTgt}});
  REQUIRE(f.trace().first_sequence() == 1);
  REQUIRE(f.trace().oldest_begin() == kFunc);
  REQUIRE_FALSE(f.tracer->stopped_full(kTid));
}

TEST_CASE("software tracer: enable and disable per thread") {
  Control control;
  auto tracer = make_tracer();
  control.set_reg(kTid, Amd64Reg::rip, kFunc);
  REQUIRE_FALSE(tracer->traces(kTid));
  REQUIRE_FALSE(tracer->disable(kTid).ok());
  REQUIRE(tracer->trace(kTid) == nullptr);
  REQUIRE(tracer->enable(kTid).ok());
  REQUIRE(tracer->enable(kTid).error().message == "Btrace already enabled.");
  REQUIRE(tracer->traces(kTid));
  REQUIRE(tracer->name() == "software");
  // Without a control the origin is read at the first resume.
  REQUIRE(tracer->before_resume(control, kTid, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(tracer->trace(kTid)->oldest_begin() == kFunc);
  REQUIRE(control.armed[kTid] == kRet);
  // Disabled without a control: still hooked until the trace stop is disarmed.
  REQUIRE(tracer->disable(kTid).ok());
  REQUIRE(tracer->trace(kTid) == nullptr);
  REQUIRE_FALSE(tracer->enabled(kTid));
  REQUIRE(tracer->traces(kTid));
  REQUIRE(tracer->before_resume(control, kTid, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(control.armed[kTid] == std::nullopt);
  REQUIRE_FALSE(tracer->traces(kTid));
  // With a control: origin now, disarm at once.
  tracer->set_control(&control);
  control.set_reg(kTid, Amd64Reg::rip, kBack);
  REQUIRE(tracer->enable(kTid).ok());
  REQUIRE(tracer->trace(kTid)->oldest_begin() == kBack);
  // jmp [ptr] taken at once, the syscall it reaches stepped.
  REQUIRE(tracer->before_resume(control, kTid, StepKind::Continue, 0) == StepKind::SingleStep);
  REQUIRE(branches(*tracer->trace(kTid)) == std::vector<Branch>{{kBack, kTgt}});
  REQUIRE(tracer->disable(kTid).ok());
  REQUIRE(control.armed[kTid] == std::nullopt);
  REQUIRE_FALSE(tracer->traces(kTid));
}

TEST_CASE("software tracer: a trace stop left over after disable is swallowed") {
  Control control;
  auto tracer = make_tracer();
  Driver run{*tracer, control, kTid};
  control.set_reg(kTid, Amd64Reg::rip, kStart);
  REQUIRE(tracer->enable(kTid).ok());
  REQUIRE(run.resume() == StepKind::Continue);
  REQUIRE(tracer->disable(kTid).ok());  // no control: disarm pending
  REQUIRE(run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(control.armed[kTid] == std::nullopt);
  REQUIRE_FALSE(tracer->traces(kTid));
}

TEST_CASE("software tracer: enable_all covers existing and new threads") {
  Control control;
  auto tracer = make_tracer({}, true);
  REQUIRE(tracer->all_enabled());
  REQUIRE(tracer->traces(1));
  REQUIRE(tracer->enabled(1));
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->before_resume(control, 1, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(tracer->trace(1)->oldest_begin() == kFunc);
  tracer->on_thread_created(2, 1);
  REQUIRE(tracer->traces(2));
  control.set_reg(2, Amd64Reg::rip, kLoop);
  REQUIRE(tracer->before_resume(control, 2, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(control.armed[2] == kLoopJne);
  // Exited threads keep their trace but are no longer hooked.
  tracer->on_thread_exited(2);
  REQUIRE_FALSE(tracer->traces(2));
  REQUIRE(tracer->trace(2) != nullptr);
  // One thread off while the rest stay on.
  tracer->set_control(&control);
  REQUIRE(tracer->disable(1).ok());
  REQUIRE_FALSE(tracer->traces(1));
  REQUIRE(tracer->traces(3));
  tracer->disable_all();
  REQUIRE_FALSE(tracer->all_enabled());
  REQUIRE_FALSE(tracer->traces(3));
  tracer->on_thread_created(4, 1);
  REQUIRE_FALSE(tracer->traces(4));
  // enable_all later picks up known threads too.
  REQUIRE(tracer->enable_all().ok());
  REQUIRE(tracer->traces(1));
  REQUIRE(tracer->trace(1)->oldest_begin() == kFunc);
}

TEST_CASE("software tracer: exec restarts the trace and forgets decoded code") {
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);
  f.tracer->on_exec(kTid);
  // New code at the same address: the cached block must not be used.
  f.control.memory[0x1020] = 0xc3;  // func: ret at once
  f.control.set_reg(kTid, Amd64Reg::rip, kFunc);
  f.control.set_reg(kTid, Amd64Reg::rsp, 0x7000);
  f.control.write_u64(0x7000, kBack);
  // At a ret (the stale block ended at kRet): taken at once to back (the
  // return address), the jmp there too, the syscall stepped.
  REQUIRE(f.run.resume() == StepKind::SingleStep);
  REQUIRE(f.trace().oldest_begin() == kFunc);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kFunc, kBack}, {kBack, kTgt}});
}

TEST_CASE("software tracer: untraced threads and unknown stops pass through") {
  Control control;
  auto tracer = make_tracer();
  Driver run{*tracer, control, 7};
  control.set_reg(7, Amd64Reg::rip, kStart);
  REQUIRE(run.resume(StepKind::SingleStep) == StepKind::SingleStep);
  REQUIRE(run.trace_stop_at(kJne) == TraceVerdict::Report);
  REQUIRE(control.arm_calls == 0);
  // A traced thread's plain SIGTRAP that is none of the tracer's doing.
  Fixture f;
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.signal_at(0x1005, SIGTRAP) == TraceVerdict::Report);
  // Unreadable code at the pc: stepped, and a landing far away is a branch.
  f.control.set_reg(kTid, Amd64Reg::rip, 0x9000);
  REQUIRE(f.run.resume() == StepKind::SingleStep);
  REQUIRE(f.run.step_done_at(kFunc) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{0x9000, kFunc}});
}

TEST_CASE("software tracer: each branch carries rsp and rbp from before it ran") {
  Fixture f;
  f.control.set_reg(kTid, Amd64Reg::rbp, 0x7100);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.trace_stop_at(kJne) == TraceVerdict::Continue);
  REQUIRE(f.run.trace_stop_at(kCall) == TraceVerdict::Continue);  // rsp 0x7000 at the call
  f.control.push_return(kTid, kBack);
  f.control.set_reg(kTid, Amd64Reg::rsp, 0x6ff8);
  f.control.write_u64(0x6ff8, kBack);
  f.control.set_reg(kTid, Amd64Reg::rbp, 0x7200);
  // The ret and the jmp after it are taken at the ret's stop.
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::SingleStep);
  REQUIRE(f.trace().has_stacks());
  REQUIRE(f.trace().stack_at(0) == decoder::StackSnapshot{0x7000, 0x7100});
  REQUIRE(f.trace().stack_at(1) == decoder::StackSnapshot{0x6ff8, 0x7200});
  REQUIRE(f.trace().stack_at(2) == decoder::StackSnapshot{0x7000, 0x7200});
}

TEST_CASE("software tracer: without working debug registers every instruction is stepped") {
  Control control;
  auto tracer = stub::tracing::SoftwareTracer::create({}, false, stub::tracing::TraceStops::SingleStep).value();
  REQUIRE(tracer->trace_stops() == stub::tracing::TraceStops::SingleStep);
  Driver run{*tracer, control, kTid};
  control.set_reg(kTid, Amd64Reg::rip, kFunc);
  control.push_return(kTid, kBack);
  REQUIRE(tracer->enable(kTid).ok());
  REQUIRE(run.resume() == StepKind::SingleStep);
  REQUIRE(run.step_done_at(kRet) == TraceVerdict::SingleStep);
  REQUIRE(run.step_done_at(kBack) == TraceVerdict::SingleStep);
  REQUIRE(tracer->trace(kTid)->size() == 1);
  REQUIRE(tracer->trace(kTid)->at(0) == Branch{kRet, kBack});
  REQUIRE(control.arm_calls == 0);  // the debug registers are never touched
  // Landing on a user breakpoint: plain continue, its int3 reports at once.
  control.user_breakpoints.insert(kTgt);
  REQUIRE(run.step_done_at(kTgt) == TraceVerdict::Continue);
  REQUIRE(tracer->trace(kTid)->size() == 2);
  REQUIRE(run.breakpoint_at(kTgt) == TraceVerdict::Report);
  REQUIRE(tracer->trace(kTid)->size() == 2);
}

TEST_CASE("software tracer: stepping, a full buffer is shown at the tracer's own step, past a jcc not taken") {
  // The process layer runs on from a step the client did not ask for,
  // unless told to show it: the thread ran on untraced to its end.
  stub::tracing::TraceConfig config;
  config.buffer_bytes = 24;  // one record
  config.overflow = decoder::OverflowPolicy::Stop;
  Control control;
  auto tracer = stub::tracing::SoftwareTracer::create(config, false, stub::tracing::TraceStops::SingleStep).value();
  Driver run{*tracer, control, kTid};
  control.set_reg(kTid, Amd64Reg::rip, kLoop);
  control.set_reg(kTid, Amd64Reg::rcx, 2);
  REQUIRE(tracer->enable(kTid).ok());
  REQUIRE(run.resume() == StepKind::SingleStep);                   // dec ecx: 1
  REQUIRE(run.step_done_at(kLoopJne) == TraceVerdict::SingleStep);  // taken: fits
  REQUIRE(run.step_done_at(kLoop) == TraceVerdict::SingleStep);     // dec ecx: 0
  control.set_reg(kTid, Amd64Reg::eflags, kZf);
  REQUIRE(run.step_done_at(kLoopJne) == TraceVerdict::SingleStep);  // not taken: no branch, it runs
  REQUIRE(run.step_done_at(kLoopNop) == TraceVerdict::SingleStep);
  REQUIRE(run.step_done_at(kTgt) == TraceVerdict::ShowStop);  // a syscall may go anywhere
  REQUIRE(tracer->stopped_full(kTid));
  REQUIRE(branches(*tracer->trace(kTid)) == std::vector<Branch>{{kLoopJne, kLoop}});
}

TEST_CASE("software tracer: the process layer's step off a user breakpoint is watched") {
  Fixture f({}, kCall);
  f.control.user_breakpoints.insert(kCall);
  // The client continues from the breakpoint: the process layer lifts it
  // and steps, then resumes the thread itself (before_resume again).
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.step_done_at(kFunc) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kCall, kFunc}});
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.armed() == kRet);
  // The same in stepping mode.
  Control control;
  auto stepping = stub::tracing::SoftwareTracer::create({}, false, stub::tracing::TraceStops::SingleStep).value();
  Driver run{*stepping, control, kTid};
  control.set_reg(kTid, Amd64Reg::rip, kCall);
  control.user_breakpoints.insert(kCall);
  REQUIRE(stepping->enable(kTid).ok());
  REQUIRE(run.resume() == StepKind::Continue);
  REQUIRE(run.step_done_at(kFunc) == TraceVerdict::Report);
  REQUIRE(stepping->trace(kTid)->size() == 1);
  REQUIRE(run.resume() == StepKind::SingleStep);
}

TEST_CASE("software tracer: adopted threads have a trace before their first resume") {
  Control control;
  auto tracer = make_tracer({}, true);
  tracer->set_control(&control);
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->trace(1) == nullptr);
  tracer->adopt_threads({1});
  REQUIRE(tracer->trace(1) != nullptr);
  REQUIRE(tracer->trace(1)->oldest_begin() == kFunc);
  REQUIRE(tracer->trace(1)->size() == 0);
  // A new inferior: nothing of the old one stays, whole-program mode does.
  tracer->forget_process();
  REQUIRE(tracer->trace(1) == nullptr);
  REQUIRE(tracer->all_enabled());
  // Without enable_all, adopting does nothing.
  auto per_thread = make_tracer();
  per_thread->adopt_threads({1});
  REQUIRE(per_thread->trace(1) == nullptr);
}

TEST_CASE("software tracer: a branch it stores itself out of the vDSO makes a checkpoint due") {
  // store() is where every branch the ptrace tracer sees goes, and the one
  // lent branch a log-full exit owes (store_lent_branch): a return from the
  // vDSO there means a clock was read, which re-execution cannot repeat.
  // (Runs of a drained log, store_lent_branches, hold none: see
  // test_translatable_code.cc.)
  Control control;
  auto tracer = make_tracer({}, true);
  tracer->set_checkpoint_limits(stub::tracing::Checkpoints::Limits{});
  tracer->checkpoints()->set_vdso({0x7000, 0x8000});
  control.copies = true;
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->before_resume(control, 1, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(tracer->checkpoints()->count() == 1);  // where the trace starts
  REQUIRE_FALSE(tracer->checkpoint_wanted(1));
  const decoder::StackSnapshot stack{0x7ffc0000, 0x7ffc0100};
  // Into the vDSO and around inside it: nothing to repeat yet.
  REQUIRE(tracer->store_lent_branch(1, kFunc + 5, 0x7010, stack));
  REQUIRE(tracer->store_lent_branch(1, 0x7020, 0x7040, stack));
  CHECK_FALSE(tracer->checkpoint_wanted(1));
  // Back out of it.
  REQUIRE(tracer->store_lent_branch(1, 0x7050, kFunc, stack));
  CHECK(tracer->checkpoint_wanted(1));
}

TEST_CASE("software tracer: a copy of one thread while the other waits in a futex, until it runs code") {
  constexpr uint64_t kFutexWaitBitsetPrivate = 9 | 128;
  constexpr int64_t kErestartsys = -512;
  Control control;
  auto tracer = make_tracer({}, true);
  tracer->set_checkpoint_limits(stub::tracing::Checkpoints::Limits{});
  control.copies = true;
  control.live_threads = {1, 2};
  tracer->on_thread_created(2, 1);  // stopped until its first resume
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->before_resume(control, 1, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(tracer->checkpoints()->count() == 1);  // where the trace starts: thread 2 stood still
  CHECK(control.last_idle == std::vector<pid_t>{2});
  // Thread 2 steps into a futex wait: it runs no code, 1's copy stays open
  // (and no copy of 2 while 1 runs).
  control.set_reg(2, Amd64Reg::rip, kTgt);
  control.set_reg(2, Amd64Reg::rax, 202);
  control.set_reg(2, Amd64Reg::rsi, kFutexWaitBitsetPrivate);
  Driver second{*tracer, control, 2};
  REQUIRE(second.resume() == StepKind::SingleStep);
  REQUIRE(tracer->checkpoints()->count() == 1);
  CHECK_FALSE(tracer->checkpoints()->all(1).front().valid_before);
  // An all-stop interrupts the wait; resumed, the kernel makes the call
  // again: stepped, still waiting.
  control.set_reg(2, Amd64Reg::rip, kTgtNop);
  control.set_reg(2, Amd64Reg::orig_rax, 202);
  control.set_reg(2, Amd64Reg::rax, static_cast<uint64_t>(kErestartsys));
  REQUIRE(second.resume() == StepKind::SingleStep);
  CHECK_FALSE(tracer->checkpoints()->all(1).front().valid_before);
  // The wait ends and thread 2 goes on into code: 1's copy serves only
  // the blocks 1 had run by then.
  control.set_reg(2, Amd64Reg::rax, 0);
  control.set_reg(2, Amd64Reg::orig_rax, 202);
  const TraceVerdict verdict = second.step_done_at(kTgtNop);
  REQUIRE((verdict == TraceVerdict::Continue || verdict == TraceVerdict::SingleStep));
  CHECK(tracer->checkpoints()->all(1).front().valid_before == tracer->trace(1)->end_sequence());
}

TEST_CASE("software tracer: a thread stepped over a call that writes memory is not idle") {
  Control control;
  auto tracer = make_tracer({}, true);
  tracer->set_checkpoint_limits(stub::tracing::Checkpoints::Limits{});
  control.copies = true;
  control.live_threads = {1, 2};
  tracer->on_thread_created(2, 1);
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->before_resume(control, 1, StepKind::Continue, 0) == StepKind::Continue);
  REQUIRE(tracer->checkpoints()->count() == 1);
  // read(2): the kernel writes the buffer while thread 1 runs on.
  control.set_reg(2, Amd64Reg::rip, kTgt);
  control.set_reg(2, Amd64Reg::rax, 0);
  Driver second{*tracer, control, 2};
  REQUIRE(second.resume() == StepKind::SingleStep);
  CHECK(tracer->checkpoints()->all(1).front().valid_before);
}

// An interval timer faster than a copy takes: each delivery (a barrier:
// the handler runs where the history alone cannot go) makes a copy due at
// the handler's first instruction, and the timer's next signal has come
// while that copy was taken. Without the rule every delivery and every
// handler's return got a copy while the next signal arrived (a 0.5 ms
// ITIMER_REAL program recorded never got past its first breakpoint).
TEST_CASE("software tracer: a signal that waits again right after a copy holds the next copies back") {
  for (bool flood : {false, true}) {
    CAPTURE(flood);
    Control control;
    auto tracer = make_tracer({}, true);
    tracer->set_checkpoint_limits(stub::tracing::Checkpoints::Limits{});
    control.copies = true;
    if (flood) control.waiting_signals.insert({1, SIGALRM});
    control.set_reg(1, Amd64Reg::rip, kLoopJne);
    control.set_reg(1, Amd64Reg::eflags, kZf);
    Driver run{*tracer, control, 1};
    REQUIRE(run.resume() == StepKind::Continue);
    REQUIRE(tracer->checkpoints()->count() == 1);  // where the trace starts
    for (std::size_t round = 1; round <= 3; ++round) {
      // SIGALRM stops the thread at the jne; delivered with the resume:
      // stepped into its handler (here: loop), a copy due there.
      REQUIRE(run.signal_at(kLoopJne, SIGALRM) == TraceVerdict::Report);
      REQUIRE(run.resume(StepKind::Continue, SIGALRM) == StepKind::SingleStep);
      REQUIRE(run.step_done_at(kLoop) == TraceVerdict::Continue);
      // The first copy is taken either way; after it a waiting signal
      // holds copies back (for 100,000 of the thread's own branches).
      const std::size_t expected = flood ? 2 : 1 + round;
      CHECK(tracer->checkpoints()->count() == expected);
    }
  }
}

// At a debug-register trace stop the kernel sets RF so that the trapping
// instruction runs on resume; a transfer the tracer takes moves the thread
// elsewhere, where RF would hide a hardware breakpoint. Before, hbreak on
// a call's return site never fired under --trace-stops=debugreg.
TEST_CASE("software tracer: a transfer taken at a debug-register stop clears RF and ends at a hardware breakpoint") {
  constexpr uint64_t kRf = 1u << 16;
  Fixture f({}, kFunc);
  f.control.hw_breakpoints = {kBack};
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.run.armed() == kRet);
  f.control.set_reg(kTid, Amd64Reg::eflags, kZf | kRf);  // as the kernel leaves it at the trap
  // ret taken to `back` (jmp [ptr], a breakpoint there): not taken on.
  REQUIRE(f.run.trace_stop_at(kRet) == TraceVerdict::Continue);
  REQUIRE(f.control.pc(kTid) == kBack);
  REQUIRE(f.control.regs[kTid].get_u64(Amd64Reg::eflags) == kZf);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kRet, kBack}});
}

// One system call step of `tid` at the `syscall` (tgt), returning
// `result`; `signal`: the step ended at that signal's stop instead of its
// trap. How many calls copies make again by then.
namespace {
uint64_t system_call_step(stub::tracing::SoftwareTracer& tracer, Control& control, pid_t tid, uint64_t number,
                          uint64_t arg, uint64_t result, int signal = 0) {
  control.set_reg(tid, Amd64Reg::rip, kTgt);
  control.set_reg(tid, Amd64Reg::rax, number);
  Driver thread{tracer, control, tid};
  REQUIRE(thread.resume() == StepKind::SingleStep);
  control.set_reg(tid, Amd64Reg::orig_rax, number);
  control.set_reg(tid, Amd64Reg::rdi, arg);
  control.set_reg(tid, Amd64Reg::rax, result);
  if (signal != 0) {
    thread.signal_at(kTgtNop, signal);
  } else {
    thread.step_done_at(kTgtNop);
  }
  return tracer.checkpoints()->calls_repeatable();
}
}  // namespace

// A growing brk is made again by copies (process/repeated_call.h) only
// where the tracer knows where the heap ended before it: after a brk of
// the same thread, with no other thread since. Here a second thread's brk
// moves the heap past the first thread's last one; once the first is
// alone again, its next brk lowers the heap (taking bytes away), which
// judged against its own last brk would have looked like growth.
TEST_CASE("software tracer: a brk is repeated only against a heap end no other thread moved since") {
  constexpr uint64_t kBrk = 12;
  Control control;
  auto tracer = make_tracer({}, true);
  tracer->set_checkpoint_limits(stub::tracing::Checkpoints::Limits{});
  control.copies = true;
  control.live_threads = {1};
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->before_resume(control, 1, StepKind::Continue, 0) == StepKind::Continue);
  // One brk step of `tid`, the heap then ending at `end`.
  auto brk = [&](pid_t tid, uint64_t end) { return system_call_step(*tracer, control, tid, kBrk, end, end); };
  CHECK(brk(1, 0x20000) == 0);  // where the heap ended before: unknown
  CHECK(brk(1, 0x30000) == 1);  // grows
  CHECK(brk(1, 0x30000) == 2);  // asks
  CHECK(brk(1, 0x28000) == 2);  // shrinks: a barrier
  CHECK(brk(1, 0x30000) == 3);
  tracer->on_thread_created(2, 1);
  control.live_threads = {1, 2};
  CHECK(brk(2, 0x50000) == 3);  // not alone
  tracer->on_thread_exited(2);
  control.live_threads = {1};
  CHECK(brk(1, 0x40000) == 3);  // from 0x50000: shrinks
  CHECK(brk(1, 0x48000) == 4);  // known again
}

// Calls that may move the heap without the tracer judging them make the
// heap end unknown: a brk whose step ended at a signal's stop as it
// returned, and any brk once a process shares the memory apart from the
// threads (clone with CLONE_VM alone). Before, the next brk was judged
// against the older end, and one that lowered the heap counted as growth.
TEST_CASE("software tracer: a brk after a call not seen whole, or beside a memory-sharing child, is not repeated") {
  constexpr uint64_t kBrk = 12;
  constexpr uint64_t kClone = 56;
  Control control;
  auto tracer = make_tracer({}, true);
  tracer->set_checkpoint_limits(stub::tracing::Checkpoints::Limits{});
  control.copies = true;
  control.live_threads = {1};
  control.set_reg(1, Amd64Reg::rip, kFunc);
  REQUIRE(tracer->before_resume(control, 1, StepKind::Continue, 0) == StepKind::Continue);
  auto call = [&](uint64_t number, uint64_t arg, uint64_t result, int signal = 0) {
    return system_call_step(*tracer, control, 1, number, arg, result, signal);
  };
  auto brk = [&](uint64_t end, int signal = 0) { return call(kBrk, end, end, signal); };
  CHECK(brk(0x20000) == 0);
  CHECK(brk(0x30000) == 1);  // grows
  CHECK(brk(0x50000, SIGALRM) == 1);  // made, its step ended by a signal
  CHECK(brk(0x40000) == 1);  // from 0x50000: shrinks
  CHECK(brk(0x48000) == 2);  // known again
  CHECK(call(kClone, CLONE_VM | SIGCHLD, 77) == 2);
  CHECK(brk(0x50000) == 2);
  CHECK(brk(0x58000) == 2);  // the child may have moved it: never known
  // A new program has a heap of its own; a vfork child and a thread share
  // it only while the tracer sees it (until the vfork returns; the thread
  // as a thread): after each, the heap end is known again.
  tracer->on_exec(1);
  const std::size_t after_exec = brk(0x10000);
  CHECK(brk(0x18000) == after_exec + 1);
  CHECK(call(kClone, CLONE_VM | CLONE_VFORK | SIGCHLD, 78) == after_exec + 1);
  CHECK(brk(0x20000) == after_exec + 1);  // forgotten at the vfork's return
  CHECK(brk(0x28000) == after_exec + 2);
  CHECK(call(kClone, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND, 79) == after_exec + 2);
  CHECK(brk(0x30000) == after_exec + 2);
  CHECK(brk(0x38000) == after_exec + 3);
}

}  // namespace test_software_tracer
