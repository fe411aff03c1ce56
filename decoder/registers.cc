#include "decoder/registers.h"

namespace decoder {

std::string_view register_name(Register reg) {
  static constexpr std::array<std::string_view, kRegisterCount> kNames = {
      "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
      "r10", "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "fs_base",
      "gs_base"};
  const auto index = static_cast<std::size_t>(reg);
  return index < kNames.size() ? kNames[index] : std::string_view("?");
}

}  // namespace decoder
