#include <catch2/catch.hpp>

#include <vector>

#include "decoder/instruction_decoder.h"
#include "decoder/stack_tracking.h"
#include "replay_fixture.h"

namespace test_stack_tracking {  // this file's own names, apart in a unity build

using decoder::StackEffect;
using decoder::StackOp;
using decoder::StackState;

namespace {

StackEffect effect_of(std::vector<uint8_t> bytes) {
  auto dec = decoder::InstructionDecoder::create();
  REQUIRE(dec.ok());
  auto insn = dec->decode(0x1000, bytes.data(), bytes.size());
  REQUIRE(insn.has_value());
  return insn->stack;
}

}  // namespace

TEST_CASE("stack effects are classified from the encoding") {
  CHECK(effect_of({0x55}).op == StackOp::Push);
  CHECK(effect_of({0x55}).value == 8);
  CHECK(effect_of({0x55}).pushes_rbp);
  CHECK_FALSE(effect_of({0x53}).pushes_rbp);                       // push rbx
  CHECK(effect_of({0x6a, 0x2a}).pushed_value == uint64_t{0x2a});    // push 0x2a
  CHECK(effect_of({0x6a, 0xff}).pushed_value == ~uint64_t{0});      // push -1
  CHECK(effect_of({0x66, 0x50}).value == 2);                        // push ax
  CHECK(effect_of({0x9c}).op == StackOp::Push);                     // pushfq
  CHECK(effect_of({0x9d}).op == StackOp::Pop);                      // popfq

  StackEffect pop_rbp = effect_of({0x5d});
  CHECK(pop_rbp.op == StackOp::Pop);
  CHECK(pop_rbp.clobbers_rbp);
  CHECK_FALSE(pop_rbp.clobbers_rsp);
  CHECK_FALSE(effect_of({0x58}).clobbers_rbp);                      // pop rax
  StackEffect pop_rsp = effect_of({0x5c});
  CHECK(pop_rsp.op == StackOp::None);
  CHECK(pop_rsp.clobbers_rsp);

  CHECK(effect_of({0x48, 0x89, 0xe5}).op == StackOp::RbpFromRsp);   // mov rbp, rsp
  CHECK(effect_of({0x48, 0x89, 0xec}).op == StackOp::RspFromRbp);   // mov rsp, rbp
  StackEffect sub = effect_of({0x48, 0x83, 0xec, 0x10});            // sub rsp, 0x10
  CHECK(sub.op == StackOp::AdjustRsp);
  CHECK(sub.value == -16);
  CHECK(effect_of({0x48, 0x81, 0xc4, 0x00, 0x01, 0x00, 0x00}).value == 256);  // add rsp, 0x100
  StackEffect and_rsp = effect_of({0x48, 0x83, 0xe4, 0xf0});        // and rsp, -16
  CHECK(and_rsp.op == StackOp::AndRsp);
  CHECK(static_cast<uint64_t>(and_rsp.value) == ~uint64_t{15});
  StackEffect lea = effect_of({0x48, 0x8d, 0x64, 0x24, 0x08});      // lea rsp, [rsp + 8]
  CHECK(lea.op == StackOp::AdjustRsp);
  CHECK(lea.value == 8);
  StackEffect lea_rbp = effect_of({0x48, 0x8d, 0x65, 0xf0});        // lea rsp, [rbp - 0x10]
  CHECK(lea_rbp.op == StackOp::RspFromRbp);
  CHECK(lea_rbp.value == -16);
  StackEffect rbp_from = effect_of({0x48, 0x8d, 0x6c, 0x24, 0x20}); // lea rbp, [rsp + 0x20]
  CHECK(rbp_from.op == StackOp::RbpFromRsp);
  CHECK(rbp_from.value == 32);

  CHECK(effect_of({0xc9}).op == StackOp::Leave);
  CHECK(effect_of({0xe8, 0, 0, 0, 0}).op == StackOp::Call);
  CHECK(effect_of({0xff, 0xd0}).op == StackOp::Call);               // call rax
  StackEffect ret = effect_of({0xc2, 0x10, 0x00});                  // ret 0x10
  CHECK(ret.op == StackOp::Return);
  CHECK(ret.value == 16);
}

TEST_CASE("other writes to rsp or rbp are clobbers, plain instructions have no effect") {
  StackEffect mov_rbp = effect_of({0x48, 0x89, 0xc5});               // mov rbp, rax
  CHECK(mov_rbp.op == StackOp::None);
  CHECK(mov_rbp.clobbers_rbp);
  CHECK_FALSE(mov_rbp.clobbers_rsp);
  CHECK(effect_of({0x48, 0x89, 0xc4}).clobbers_rsp);                // mov rsp, rax
  CHECK(effect_of({0x48, 0x29, 0xc4}).clobbers_rsp);                // sub rsp, rax
  CHECK(effect_of({0x48, 0x87, 0xe5}).clobbers_rsp);                // xchg rbp, rsp
  CHECK(effect_of({0x48, 0x87, 0xe5}).clobbers_rbp);
  CHECK(effect_of({0x89, 0xe5}).clobbers_rbp);                      // mov ebp, esp
  CHECK(effect_of({0x48, 0x83, 0xc5, 0x08}).clobbers_rbp);          // add rbp, 8
  CHECK(effect_of({0xc8, 0x10, 0x00, 0x00}).clobbers_rsp);          // enter 0x10, 0
  CHECK(effect_of({0xc8, 0x10, 0x00, 0x00}).clobbers_rbp);
  for (auto bytes : {std::vector<uint8_t>{0x48, 0x89, 0xc8}, {0x90}, {0x48, 0x8b, 0x45, 0xf8},
                     {0x48, 0x89, 0x44, 0x24, 0x08}, {0x0f, 0x05}}) {
    StackEffect e = effect_of(bytes);
    CAPTURE(bytes);
    CHECK(e == StackEffect{});
  }
}

TEST_CASE("forward and backward transfer functions invert each other") {
  const StackState s{0x7000, 0x8000};
  auto round_trip = [&](const std::vector<uint8_t>& bytes) {
    StackEffect e = effect_of(bytes);
    StackState after = decoder::step_forward(e, s);
    StackState before = decoder::step_backward(e, after);
    return std::pair{after, before};
  };
  auto [push_after, push_before] = round_trip({0x55});
  CHECK(push_after == StackState{0x6ff8, 0x8000});
  CHECK(push_before == s);
  auto [mov_after, mov_before] = round_trip({0x48, 0x89, 0xe5});
  CHECK(mov_after == StackState{0x7000, 0x7000});
  CHECK(mov_before == StackState{0x7000, std::nullopt});  // old rbp is lost
  auto [leave_after, leave_before] = round_trip({0xc9});
  CHECK(leave_after == StackState{0x8008, std::nullopt});
  CHECK(leave_before == StackState{std::nullopt, 0x8000});  // old rsp is lost
  CHECK(decoder::step_backward(effect_of({0xc9}), StackState{0x8008, 0x9000}) ==
        StackState{std::nullopt, 0x8000});
  auto [ret_after, ret_before] = round_trip({0xc2, 0x10, 0x00});
  CHECK(ret_after == StackState{0x7018, 0x8000});
  CHECK(ret_before == s);
  auto [and_after, and_before] = round_trip({0x48, 0x83, 0xe4, 0xf0});
  CHECK(*and_after.rsp == 0x7000);
  CHECK_FALSE(and_before.rsp.has_value());
  // mov rbp, rsp backward with rsp unknown: rsp still follows from rbp.
  CHECK(decoder::step_backward(effect_of({0x48, 0x89, 0xe5}), StackState{std::nullopt, 0x5000}) ==
        StackState{0x5000, std::nullopt});
}

TEST_CASE("after_branch applies only transfers that reach the target") {
  auto dec = decoder::InstructionDecoder::create();
  REQUIRE(dec.ok());
  const std::vector<uint8_t> call = {0xe8, 0x0b, 0x00, 0x00, 0x00};  // call 0x1010
  auto insn = dec->decode(0x1000, call.data(), call.size());
  REQUIRE(insn);
  const StackState s{0x7000, 0x8000};
  CHECK(decoder::after_branch(*insn, 0x1010, s) == StackState{0x6ff8, 0x8000});
  // A signal delivered while the thread sat on that call: not its effect.
  CHECK(decoder::after_branch(*insn, 0x5555, s) == StackState{});
  const std::vector<uint8_t> nop = {0x90};
  auto plain = dec->decode(0x1000, nop.data(), 1);
  CHECK(decoder::after_branch(*plain, 0x2000, s) == StackState{});
}

TEST_CASE("forward and backward passes agree on every instruction where both are known") {
  replay_test::Fixture f;
  const auto points = replay_test::oracle();
  // Walk the oracle's run forward instruction by instruction: forward
  // transfer from each position must give the next one (where known), and
  // backward transfer from the next must give this one (where known).
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    auto insn = f.decoder.decode(points[i].pc, f.reader);
    REQUIRE(insn);
    const StackState here{points[i].rsp, points[i].rbp};
    const StackState next{points[i + 1].rsp, points[i + 1].rbp};
    CAPTURE(i, points[i].pc);
    const StackState fwd = insn->is_control_transfer()
                               ? decoder::after_branch(*insn, points[i + 1].pc, here)
                               : decoder::step_forward(insn->stack, here);
    if (fwd.rsp) CHECK(*fwd.rsp == next.rsp);
    if (fwd.rbp) CHECK(*fwd.rbp == next.rbp);
    const StackState back = decoder::step_backward(insn->stack, next);
    if (back.rsp) CHECK(*back.rsp == here.rsp);
    if (back.rbp) CHECK(*back.rbp == here.rbp);
    CHECK((fwd.rsp || back.rsp));
  }
}

}  // namespace test_stack_tracking
