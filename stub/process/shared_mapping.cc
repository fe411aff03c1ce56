#include "stub/process/shared_mapping.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace stub::process {

btstub::Expected<SharedMapping> SharedMapping::map(int fd, uint64_t size, uint64_t program_address) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return btstub::make_error(btstub::ErrorCode::Internal,
                              std::string("Cannot map the program's shared memory: ") + std::strerror(errno));
  }
  return SharedMapping(static_cast<uint8_t*>(p), size, program_address);
}

SharedMapping::SharedMapping(SharedMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      program_address_(std::exchange(other.program_address_, 0)) {}

SharedMapping& SharedMapping::operator=(SharedMapping&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    program_address_ = std::exchange(other.program_address_, 0);
  }
  return *this;
}

SharedMapping::~SharedMapping() { release(); }

void SharedMapping::release() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
}

uint8_t* SharedMapping::at(uint64_t address, uint64_t len) const {
  if (address < program_address_ || len > size_ || address - program_address_ > size_ - len) return nullptr;
  return data_ + (address - program_address_);
}

}  // namespace stub::process
