#pragma once
// btstub's own view of memory it mapped into the program shared (a memfd
// both map: PtraceProcess::map_shared_program_memory). The translating
// tracer reads and empties a thread's log in place there, with no system
// call and no copy. Unmapped from btstub when destroyed; the program's
// mapping is the program's (gone at its exec or exit).
#include <cstdint>

#include "protocol/expected.h"

namespace stub::process {

class SharedMapping {
 public:
  // Maps `size` bytes of the open `fd` (a memfd the program maps at
  // `program_address`) into btstub. The fd may be closed afterwards.
  static btstub::Expected<SharedMapping> map(int fd, uint64_t size, uint64_t program_address);

  SharedMapping(SharedMapping&& other) noexcept;
  SharedMapping& operator=(SharedMapping&& other) noexcept;
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping();

  // Where the program sees these bytes.
  uint64_t program_address() const { return program_address_; }
  // btstub's pointer to the program's `address` (within the mapping), or
  // nullptr when [address, address + len) is not all inside it.
  uint8_t* at(uint64_t address, uint64_t len) const;

 private:
  SharedMapping(uint8_t* data, uint64_t size, uint64_t program_address)
      : data_(data), size_(size), program_address_(program_address) {}
  void release();

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t program_address_ = 0;
};

}  // namespace stub::process
