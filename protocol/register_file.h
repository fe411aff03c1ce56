#pragma once
// Register values in the wire layout of amd64_registers.h, little-endian,
// with a per-register availability flag: an unavailable register is sent as
// `xx` bytes so gdb shows <unavailable> rather than a wrong value.
#include <cstdint>
#include <vector>

#include "protocol/amd64_registers.h"

namespace protocol {

class RegisterFile {
 public:
  RegisterFile();

  uint64_t get_u64(Amd64Reg reg) const;       // low 8 bytes (or fewer) of reg
  void set_u64(Amd64Reg reg, uint64_t value);  // marks it available

  // Raw bytes of register `regnum` (size amd64_register_size(regnum)).
  const uint8_t* bytes(unsigned regnum) const;
  uint8_t* bytes(unsigned regnum);

  bool available(unsigned regnum) const { return available_[regnum]; }
  void set_available(unsigned regnum, bool yes) { available_[regnum] = yes; }
  void set_all_available(bool yes);

  const std::vector<uint8_t>& raw() const { return raw_; }
  std::vector<uint8_t>& raw() { return raw_; }

 private:
  std::vector<uint8_t> raw_;
  std::vector<bool> available_;
};

}  // namespace protocol
