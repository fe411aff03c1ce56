#include "stub/process/seccomp_filter.h"

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstring>

namespace stub::process {
namespace {

constexpr std::size_t kDataBytes = 64;  // sizeof(struct seccomp_data)
constexpr std::size_t kMemoryWords = BPF_MEMWORDS;

// The 32-bit word at `offset` (aligned, inside: well_formed) of the
// call's seccomp_data, as a filter loads it (x86-64 is little-endian).
uint32_t data_word(const SeccompCall& call, uint32_t offset) {
  uint8_t data[kDataBytes];
  std::memcpy(data, &call.number, 4);
  std::memcpy(data + 4, &call.arch, 4);
  std::memcpy(data + 8, &call.pc, 8);
  std::memcpy(data + 16, call.args.data(), 48);
  uint32_t word = 0;
  std::memcpy(&word, data + offset, 4);
  return word;
}

// A, the ALU's operand op'ed with `operand` (never a division by zero:
// the caller's); nullopt for an operation seccomp does not take.
std::optional<uint32_t> alu(uint16_t op, uint32_t a, uint32_t operand) {
  switch (op) {
    case BPF_ADD: return a + operand;
    case BPF_SUB: return a - operand;
    case BPF_MUL: return a * operand;
    case BPF_DIV: return a / operand;
    case BPF_AND: return a & operand;
    case BPF_OR: return a | operand;
    case BPF_XOR: return a ^ operand;
    // The kernel's interpreter and JITs shift by the low five bits.
    case BPF_LSH: return a << (operand & 31);
    case BPF_RSH: return a >> (operand & 31);
    case BPF_NEG: return 0u - a;
    default: return std::nullopt;
  }
}

std::optional<bool> jump_taken(uint16_t op, uint32_t a, uint32_t operand) {
  switch (op) {
    case BPF_JEQ: return a == operand;
    case BPF_JGT: return a > operand;
    case BPF_JGE: return a >= operand;
    case BPF_JSET: return (a & operand) != 0;
    default: return std::nullopt;
  }
}

// What the kernel's checks before it installs a filter hold for every
// instruction, whether run or not: jumps within the filter, memory words
// and loads within range, a return at the end.
bool well_formed(std::span<const BpfInstruction> filter) {
  if (filter.empty() || filter.size() > BPF_MAXINSNS || BPF_CLASS(filter.back().code) != BPF_RET) return false;
  for (std::size_t pc = 0; pc < filter.size(); ++pc) {
    const BpfInstruction& insn = filter[pc];
    const std::size_t after = filter.size() - pc - 1;  // instructions a jump may skip, and then some
    const uint16_t code = insn.code;
    if (code == (BPF_JMP | BPF_JA)) {
      if (insn.k >= after) return false;
    } else if (BPF_CLASS(code) == BPF_JMP) {
      if (insn.jt >= after || insn.jf >= after) return false;
    } else if (code == BPF_ST || code == BPF_STX || code == (BPF_LD | BPF_MEM) || code == (BPF_LDX | BPF_MEM)) {
      if (insn.k >= kMemoryWords) return false;
    } else if (code == (BPF_LD | BPF_W | BPF_ABS)) {
      if (insn.k % 4 != 0 || insn.k >= kDataBytes) return false;
    }
  }
  return true;
}

// The kernel's order of precedence: a smaller action, taken as signed,
// comes first (SECCOMP_RET_KILL_PROCESS is 0x80000000).
int32_t precedence(uint32_t action) { return static_cast<int32_t>(action & SECCOMP_RET_ACTION_FULL); }

}  // namespace

std::optional<uint32_t> run_seccomp_filter(std::span<const BpfInstruction> filter, const SeccompCall& call) {
  if (!well_formed(filter)) return std::nullopt;
  uint32_t a = 0;
  uint32_t x = 0;
  uint32_t memory[kMemoryWords] = {};
  // Every jump goes forward, so a filter runs at most its length, and
  // well_formed holds every jump, load and store in range.
  for (std::size_t pc = 0; pc < filter.size(); ++pc) {
    const BpfInstruction& insn = filter[pc];
    const uint16_t code = insn.code;
    switch (BPF_CLASS(code)) {
      case BPF_LD:
      case BPF_LDX: {
        std::optional<uint32_t> value;
        if (code == (BPF_LD | BPF_W | BPF_ABS)) {
          value = data_word(call, insn.k);
        } else if (code == (BPF_LD | BPF_W | BPF_LEN) || code == (BPF_LDX | BPF_W | BPF_LEN)) {
          value = kDataBytes;
        } else if (code == (BPF_LD | BPF_IMM) || code == (BPF_LDX | BPF_IMM)) {
          value = insn.k;
        } else if (code == (BPF_LD | BPF_MEM) || code == (BPF_LDX | BPF_MEM)) {
          value = memory[insn.k];
        }
        if (!value) return std::nullopt;
        (BPF_CLASS(code) == BPF_LD ? a : x) = *value;
        break;
      }
      case BPF_ST:
      case BPF_STX:
        if (code != BPF_ST && code != BPF_STX) return std::nullopt;
        memory[insn.k] = BPF_CLASS(code) == BPF_ST ? a : x;
        break;
      case BPF_ALU: {
        if (BPF_OP(code) == BPF_NEG && code != (BPF_ALU | BPF_NEG)) return std::nullopt;
        const uint32_t operand = BPF_SRC(code) == BPF_X ? x : insn.k;
        // The kernel's answer to a division by zero: 0, SECCOMP_RET_KILL_THREAD.
        if (BPF_OP(code) == BPF_DIV && operand == 0) return 0;
        auto result = alu(BPF_OP(code), a, operand);
        if (!result) return std::nullopt;
        a = *result;
        break;
      }
      case BPF_JMP: {
        std::size_t skip = 0;
        if (code == (BPF_JMP | BPF_JA)) {
          skip = insn.k;
        } else {
          auto taken = jump_taken(BPF_OP(code), a, BPF_SRC(code) == BPF_X ? x : insn.k);
          if (!taken) return std::nullopt;
          skip = *taken ? insn.jt : insn.jf;
        }
        pc += skip;
        break;
      }
      case BPF_RET:
        if (code == (BPF_RET | BPF_K)) return insn.k;
        if (code == (BPF_RET | BPF_A)) return a;
        return std::nullopt;
      case BPF_MISC:
        if (code == (BPF_MISC | BPF_TAX)) {
          x = a;
        } else if (code == (BPF_MISC | BPF_TXA)) {
          a = x;
        } else {
          return std::nullopt;
        }
        break;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;  // never: well_formed ends every filter in a return
}

std::optional<uint32_t> seccomp_verdict(const std::vector<std::vector<BpfInstruction>>& filters,
                                        const SeccompCall& call) {
  uint32_t verdict = SECCOMP_RET_ALLOW;
  for (const std::vector<BpfInstruction>& filter : filters) {
    const std::optional<uint32_t> answer = run_seccomp_filter(filter, call);
    if (!answer) return std::nullopt;
    if (precedence(*answer) < precedence(verdict)) verdict = *answer;
  }
  return verdict;
}

bool seccomp_action_harmless(uint32_t action) {
  switch (action & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW:
    case SECCOMP_RET_LOG:
    case SECCOMP_RET_ERRNO:
    case SECCOMP_RET_TRAP:
    case SECCOMP_RET_TRACE:
      return true;
    default:  // the kills, a supervisor's notification, and what the kernel takes as a kill
      return false;
  }
}

}  // namespace stub::process
