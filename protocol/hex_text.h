#pragma once
// An address or value as error messages and monitor replies name it: "0x"
// and lower-case hex digits (gdb's own style). One definition for every
// file that formats one, so no two keep their own copy.
#include <cstdint>
#include <cstdio>
#include <string>

namespace protocol {

inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace protocol
