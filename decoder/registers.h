#pragma once
// The register view the branch evaluator needs. Kept decoder-local so that
// decoder/ does not depend on protocol/'s register numbering; the stub adapts
// its register file to RegisterSource.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace decoder {

enum class Register {
  Rax, Rbx, Rcx, Rdx, Rsi, Rdi, Rbp, Rsp,
  R8, R9, R10, R11, R12, R13, R14, R15,
  Rip, Rflags, FsBase, GsBase,
};
inline constexpr std::size_t kRegisterCount = 20;

std::string_view register_name(Register reg);

class RegisterSource {
 public:
  virtual ~RegisterSource() = default;
  virtual uint64_t get(Register reg) const = 0;
};

// A plain value-holding RegisterSource (tests, or a snapshot filled by the stub).
class RegisterArray final : public RegisterSource {
 public:
  uint64_t get(Register reg) const override {
    return values_[static_cast<std::size_t>(reg)];
  }
  void set(Register reg, uint64_t value) {
    values_[static_cast<std::size_t>(reg)] = value;
  }

 private:
  std::array<uint64_t, kRegisterCount> values_{};
};

// RFLAGS bits the condition codes read.
inline constexpr uint64_t kFlagCarry = 1u << 0;
inline constexpr uint64_t kFlagParity = 1u << 2;
inline constexpr uint64_t kFlagZero = 1u << 6;
inline constexpr uint64_t kFlagSign = 1u << 7;
inline constexpr uint64_t kFlagOverflow = 1u << 11;

}  // namespace decoder
