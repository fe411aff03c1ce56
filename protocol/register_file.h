#pragma once
// Register values in the wire layout of amd64_registers.h, little-endian,
// with a per-register availability flag: an unavailable register is sent as
// `xx` bytes so gdb shows <unavailable> rather than a wrong value.
#include <array>
#include <bitset>
#include <cstdint>

#include "protocol/amd64_registers.h"

namespace protocol {

// The bytes live in the object, not on the heap: a ptrace stop reads
// registers into a fresh file, and its two heap blocks (2.5 KB zero-filled,
// a bit vector) were most of the bytes btstub allocated (a sixth of its
// allocations), under ASan most of its memory (its quarantine holds freed
// blocks back) and page faults.
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

  using Bytes = std::array<uint8_t, kAmd64RegisterBufferSize>;
  const Bytes& raw() const { return raw_; }
  Bytes& raw() { return raw_; }

 private:
  Bytes raw_{};
  std::bitset<kAmd64RegisterCount> available_;
};

}  // namespace protocol
