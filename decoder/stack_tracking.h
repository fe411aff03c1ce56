#pragma once
// rsp and rbp through straight-line code: the transfer functions of
// StackEffect forward (state before an instruction -> after) and backward
// (after -> before). A register is known (a value) or not (nullopt); an
// unknown one never turns into a guess.
#include <cstdint>
#include <optional>

#include "decoder/instruction.h"

namespace decoder {

struct StackState {
  std::optional<uint64_t> rsp;
  std::optional<uint64_t> rbp;
  bool operator==(const StackState&) const = default;
};

StackState step_forward(const StackEffect& effect, const StackState& before);
StackState step_backward(const StackEffect& effect, const StackState& after);

// Per register: `a` where known, else `b`.
StackState merge(const StackState& a, const StackState& b);

// The state right after a taken branch executed, from the state before it
// (the trace's snapshot). Only a transfer that really goes to `to` has a
// known effect; an asynchronous "branch" (signal delivery at an arbitrary
// instruction, sigreturn) leaves both registers unknown.
StackState after_branch(const Instruction& from_insn, uint64_t to, const StackState& before);

}  // namespace decoder
