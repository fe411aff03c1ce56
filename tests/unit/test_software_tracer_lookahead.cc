// SoftwareTracer, TraceStops::Breakpoint: conditional branches run without a
// stop of their own (software_tracer_lookahead.cc), against the scripted
// process layer of software_tracer_fake.h.
#include <catch2/catch.hpp>

#include "software_tracer_fake.h"

using decoder::Branch;
using decoder::StackSnapshot;
using fake::branches;
using stub::StepKind;
using stub::TraceVerdict;
using namespace fake;

namespace {

constexpr pid_t kTid = 200;

// Assembled at 0x3000.
constexpr uint64_t kEntry = 0x3000, kJe = 0x3003, kFallCall = 0x3005, kTaken = 0x300a, kTakenSub = 0x300b,
                   kTakenJmp = 0x300f, kCallee = 0x3020, kCalleeRet = 0x3021, kPopEntry = 0x3030,
                   kPopJe = 0x3032;
const std::vector<uint8_t> kLookaheadCode = {
    0x53,                          // 3000 push rbx
    0x85, 0xc0,                    // 3001 test eax, eax
    0x74, 0x05,                    // 3003 je 0x300a
    0xe8, 0x16, 0x00, 0x00, 0x00,  // 3005 call 0x3020
    0x50,                          // 300a push rax
    0x48, 0x83, 0xec, 0x10,        // 300b sub rsp, 0x10
    0xeb, 0x0f,                    // 300f jmp 0x3020
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,  // 3011
    0x90,                          // 3020 nop
    0xc3,                          // 3021 ret
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,  // 3022
    0x85, 0xc0,                    // 3030 test eax, eax
    0x74, 0x02,                    // 3032 je 0x3036
    0xeb, 0xea,                    // 3034 jmp 0x3020
    0x5d,                          // 3036 pop rbp
    0xc3,                          // 3037 ret
};
constexpr uint64_t kRbp = 0x1234;

struct Fixture {
  Control control;
  std::unique_ptr<stub::SoftwareTracer> tracer;
  Driver run;
  explicit Fixture(uint64_t pc, bool taken) : run{make(), control, kTid} {
    for (std::size_t i = 0; i < kLookaheadCode.size(); ++i) control.memory[0x3000 + i] = kLookaheadCode[i];
    control.map(kStack - 0x100, 0x108);
    control.set_reg(kTid, Amd64Reg::rip, pc);
    control.set_reg(kTid, Amd64Reg::eflags, taken ? kZf : 0);
    control.set_reg(kTid, Amd64Reg::rsp, kStack);
    control.set_reg(kTid, Amd64Reg::rbp, kRbp);
    REQUIRE(tracer->enable(kTid).ok());
  }
  stub::SoftwareTracer& make() {
    auto made = stub::SoftwareTracer::create({}, false, stub::TraceStops::Breakpoint);
    REQUIRE(made.ok());
    tracer = std::move(made).value();
    return *tracer;
  }
  const decoder::BlockTrace& trace() { return *tracer->trace(kTid); }
  // What the program did on its own since the last resume.
  void ran_to(uint64_t pc, uint64_t rsp) {
    control.set_reg(kTid, Amd64Reg::rip, pc);
    control.set_reg(kTid, Amd64Reg::rsp, rsp);
  }
};

}  // namespace

TEST_CASE("lookahead: the ends of both outcomes are armed, not the jcc") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3s[kTid] == std::vector<uint64_t>{kTakenJmp, kFallCall});
  REQUIRE(f.trace().size() == 0);
}

TEST_CASE("lookahead: a stop at the taken block's end stores the jcc with its own rsp") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  // push rbx, je (taken), push rax, sub rsp 0x10: rsp 0x20 lower at the jmp.
  f.ran_to(kTakenJmp, kStack - 0x20);
  REQUIRE(f.run.trace_stop_at(kTakenJmp) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kJe, kTaken}, {kTakenJmp, kCallee}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
  REQUIRE(f.trace().stack_at(1) == StackSnapshot{kStack - 0x20, kRbp});
  REQUIRE(f.control.int3[kTid] == kCalleeRet);  // one int3 again: a ret
  REQUIRE(f.tracer->stats().looked_past == 1);
}

TEST_CASE("lookahead: a stop at the fall-through block's end stores nothing for the jcc") {
  Fixture f(kEntry, false);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kFallCall, kStack - 8);
  REQUIRE(f.run.trace_stop_at(kFallCall) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kFallCall, kCallee}});
  REQUIRE(f.tracer->stats().looked_past == 1);
}

TEST_CASE("lookahead: a stop inside the taken block counts only what ran before it") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  // A user breakpoint at the sub: push rbx and push rax ran.
  f.control.user_breakpoints.insert(kTakenSub);
  f.ran_to(kTakenSub, kStack - 0x10);
  REQUIRE(f.run.breakpoint_at(kTakenSub) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kJe, kTaken}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
}

TEST_CASE("lookahead: a stop before the jcc ran stores nothing and plans again") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kEntry + 1, kStack - 8);  // a signal after push rbx
  REQUIRE(f.run.signal_at(kEntry + 1, SIGUSR1) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 0);
  REQUIRE(f.tracer->stats().looked_past == 0);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3s[kTid] == std::vector<uint64_t>{kTakenJmp, kFallCall});
}

TEST_CASE("lookahead: a thread held by the all-stop settles its branch at once") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kTakenSub, kStack - 0x10);
  f.tracer->on_held(f.control, kTid);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kJe, kTaken}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
  // Resumed there: its block's end is armed, nothing is stored twice.
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kTakenJmp);
  REQUIRE(f.trace().size() == 1);
}

TEST_CASE("lookahead: not past a jcc whose taken block pops rbp (its rbp would be lost)") {
  Fixture f(kPopEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kPopJe);
  REQUIRE(f.trace().size() == 0);
}
