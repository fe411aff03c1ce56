// SoftwareTracer, TraceStops::Breakpoint: conditional branches run without a
// stop of their own (software_tracer_lookahead.cc), against the scripted
// process layer of software_tracer_fake.h.
#include <catch2/catch.hpp>

#include "software_tracer_fake.h"

namespace test_software_tracer_lookahead {  // this file's own names, apart in a unity build

using decoder::Branch;
using decoder::StackSnapshot;
using fake::branches;
using stub::process::StepKind;
using stub::process::TraceVerdict;
using namespace fake;

namespace {

constexpr pid_t kTid = 200;

// Assembled at 0x3000.
constexpr uint64_t kEntry = 0x3000, kJe = 0x3003, kFallCall = 0x3005, kTaken = 0x300a, kTakenSub = 0x300b,
                   kTakenJmp = 0x300f, kCallee = 0x3020, kCalleeRet = 0x3021, kPopEntry = 0x3030,
                   kPopJe = 0x3032, kCallEntry = 0x3040, kDirectCall = 0x3041, kAfterCall = 0x3046,
                   kTreeEntry = 0x3050, kTreeJmp = 0x3051, kTreeTest = 0x3060, kTreeJne = 0x3062,
                   kTreeFallRet = 0x3065, kTreeTaken = 0x3068, kTreeTakenRet = 0x3069;
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
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,  // 3038
    0x90,                          // 3040 nop
    0xe8, 0xda, 0xff, 0xff, 0xff,  // 3041 call 0x3020
    0x90,                          // 3046 nop
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,  // 3047
    0x90,                          // 3050 nop
    0xeb, 0x0d,                    // 3051 jmp 0x3060
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,  // 3053
    0x85, 0xc0,                    // 3060 test eax, eax
    0x75, 0x04,                    // 3062 jne 0x3068
    0x50,                          // 3064 push rax
    0xc3,                          // 3065 ret
    0x90, 0x90,                    // 3066
    0x90,                          // 3068 nop
    0xc3,                          // 3069 ret
};
constexpr uint64_t kRbp = 0x1234;

struct Fixture {
  Control control;
  std::unique_ptr<stub::tracing::SoftwareTracer> tracer;
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
  stub::tracing::SoftwareTracer& make() {
    tracer = breakpoint_tracer();
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

TEST_CASE("lookahead: a jcc's routes run on through direct jmp/call to the ends armed") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  // taken: [300a, jmp 300f] then [3020, ret 3021]; fall-through: [call
  // 3005] (going on would reach the ret the other route ends at).
  REQUIRE(f.control.int3s[kTid] == std::vector<uint64_t>{kCalleeRet, kFallCall});
  REQUIRE(f.trace().size() == 0);
}

TEST_CASE("lookahead: a stop at the end of the taken route stores every branch on it with its own rsp") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  // push rbx, je (taken), push rax, sub rsp 0x10, jmp, nop: at the ret.
  f.ran_to(kCalleeRet, kStack - 0x20);
  f.control.write_u64(kStack - 0x20, kPopEntry);  // where the ret goes
  REQUIRE(f.run.trace_stop_at(kCalleeRet) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) ==
          std::vector<Branch>{{kJe, kTaken}, {kTakenJmp, kCallee}, {kCalleeRet, kPopEntry}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
  REQUIRE(f.trace().stack_at(1) == StackSnapshot{kStack - 0x20, kRbp});
  REQUIRE(f.trace().stack_at(2) == StackSnapshot{kStack - 0x20, kRbp});
  REQUIRE(f.tracer->stats().looked_past == 2);  // the je and the jmp
  // The je at pop_entry: its taken block pops rbp, which would be lost: it
  // gets its own stop.
  REQUIRE(f.control.int3[kTid] == kPopJe);
}

TEST_CASE("lookahead: a stop at the fall-through end stores nothing for the jcc") {
  Fixture f(kEntry, false);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kFallCall, kStack - 8);
  REQUIRE(f.run.trace_stop_at(kFallCall) == TraceVerdict::Continue);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kFallCall, kCallee}});
  REQUIRE(f.tracer->stats().looked_past == 1);
}

TEST_CASE("lookahead: a stop inside a hop counts only what ran before it") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  // A user breakpoint at the sub: push rbx and push rax ran, the jmp not.
  f.control.user_breakpoints.insert(kTakenSub);
  f.ran_to(kTakenSub, kStack - 0x10);
  REQUIRE(f.run.breakpoint_at(kTakenSub) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kJe, kTaken}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
}

TEST_CASE("lookahead: a signal in the second hop stores the first hop's jmp too") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kCallee, kStack - 0x20);
  REQUIRE(f.run.signal_at(kCallee, SIGUSR1) == TraceVerdict::Report);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kJe, kTaken}, {kTakenJmp, kCallee}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
  REQUIRE(f.trace().stack_at(1) == StackSnapshot{kStack - 0x20, kRbp});
}

TEST_CASE("lookahead: a stop before the entry ran stores nothing and plans again") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kEntry + 1, kStack - 8);  // a signal after push rbx
  REQUIRE(f.run.signal_at(kEntry + 1, SIGUSR1) == TraceVerdict::Report);
  REQUIRE(f.trace().size() == 0);
  REQUIRE(f.tracer->stats().looked_past == 0);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3s[kTid] == std::vector<uint64_t>{kCalleeRet, kFallCall});
}

TEST_CASE("lookahead: a thread held by the all-stop settles at once") {
  Fixture f(kEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kTakenSub, kStack - 0x10);
  f.tracer->on_held(f.control, kTid);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kJe, kTaken}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack - 8, kRbp});
  // Resumed there: a plan from the jmp (one route, to the ret); nothing is
  // stored twice.
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kCalleeRet);
  REQUIRE(f.trace().size() == 1);
}

TEST_CASE("lookahead: a direct call runs unstopped, stored with rsp before its push") {
  Fixture f(kCallEntry, false);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kCalleeRet);
  f.ran_to(kCalleeRet, kStack - 8);
  f.control.write_u64(kStack - 8, kAfterCall);
  REQUIRE(f.run.trace_stop_at(kCalleeRet) == TraceVerdict::Continue);  // the ret emulated
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kDirectCall, kCallee}, {kCalleeRet, kAfterCall}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack, kRbp});
  REQUIRE(f.trace().stack_at(1) == StackSnapshot{kStack - 8, kRbp});
}

TEST_CASE("lookahead: not past a jcc whose taken block pops rbp (its rbp would be lost)") {
  Fixture f(kPopEntry, true);
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3[kTid] == kPopJe);
  REQUIRE(f.trace().size() == 0);
}

TEST_CASE("lookahead: a plan runs on through a conditional branch, both ways") {
  // jmp, then [test; jne]: taken -> [nop; ret], fall-through -> [push rax; ret].
  Fixture f(kTreeEntry, false);  // ZF clear: jne taken
  REQUIRE(f.run.resume() == StepKind::Continue);
  REQUIRE(f.control.int3s[kTid] == std::vector<uint64_t>{kTreeTakenRet, kTreeFallRet});
  f.ran_to(kTreeTakenRet, kStack);
  f.control.write_u64(kStack, kAfterCall);
  (void)f.run.trace_stop_at(kTreeTakenRet);
  REQUIRE(branches(f.trace()) ==
          std::vector<Branch>{{kTreeJmp, kTreeTest}, {kTreeJne, kTreeTaken}, {kTreeTakenRet, kAfterCall}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack, kRbp});
  REQUIRE(f.trace().stack_at(1) == StackSnapshot{kStack, kRbp});
  REQUIRE(f.tracer->stats().looked_past == 2);
}

TEST_CASE("lookahead: through a conditional branch not taken, only the branches above are stored") {
  Fixture f(kTreeEntry, true);  // ZF set: jne not taken
  REQUIRE(f.run.resume() == StepKind::Continue);
  f.ran_to(kTreeFallRet, kStack - 8);  // push rax ran
  f.control.write_u64(kStack - 8, kAfterCall);
  (void)f.run.trace_stop_at(kTreeFallRet);
  REQUIRE(branches(f.trace()) == std::vector<Branch>{{kTreeJmp, kTreeTest}, {kTreeFallRet, kAfterCall}});
  REQUIRE(f.trace().stack_at(0) == StackSnapshot{kStack, kRbp});  // before push rax
  REQUIRE(f.trace().stack_at(1) == StackSnapshot{kStack - 8, kRbp});
}

}  // namespace test_software_tracer_lookahead
