#include "protocol/register_file.h"

#include <algorithm>

namespace protocol {

RegisterFile::RegisterFile() = default;

uint64_t RegisterFile::get_u64(Amd64Reg reg) const {
  auto regnum = static_cast<unsigned>(reg);
  std::size_t size = std::min<std::size_t>(8, amd64_register_size(regnum));
  const uint8_t* p = bytes(regnum);
  uint64_t value = 0;
  for (std::size_t i = 0; i < size; ++i) value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}

void RegisterFile::set_u64(Amd64Reg reg, uint64_t value) {
  auto regnum = static_cast<unsigned>(reg);
  std::size_t size = std::min<std::size_t>(8, amd64_register_size(regnum));
  uint8_t* p = bytes(regnum);
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
  available_[regnum] = true;
}

const uint8_t* RegisterFile::bytes(unsigned regnum) const { return raw_.data() + amd64_register_offset(regnum); }
uint8_t* RegisterFile::bytes(unsigned regnum) { return raw_.data() + amd64_register_offset(regnum); }

void RegisterFile::set_all_available(bool yes) {
  if (yes) {
    available_.set();
  } else {
    available_.reset();
  }
}

}  // namespace protocol
