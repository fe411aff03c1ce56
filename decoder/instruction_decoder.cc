#include "decoder/instruction_decoder.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <utility>

#include "decoder/capstone_classify.h"

namespace decoder {

static_assert(std::is_same_v<csh, std::size_t>,
              "InstructionDecoder stores Capstone's csh as size_t");

btstub::Expected<InstructionDecoder> InstructionDecoder::create() {
  csh handle = 0;
  const cs_err open_err = cs_open(CS_ARCH_X86, CS_MODE_64, &handle);
  if (open_err != CS_ERR_OK) {
    return btstub::make_error(
        btstub::ErrorCode::Internal,
        std::string("capstone cs_open failed: ") + cs_strerror(open_err));
  }
  const cs_err opt_err = cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  cs_insn* insn = opt_err == CS_ERR_OK ? cs_malloc(handle) : nullptr;
  if (insn == nullptr) {
    cs_close(&handle);
    return btstub::make_error(btstub::ErrorCode::Internal,
                              "capstone: cannot enable detail or allocate");
  }
  return InstructionDecoder(handle, insn);
}

InstructionDecoder::InstructionDecoder(InstructionDecoder&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)),
      insn_(std::exchange(other.insn_, nullptr)) {}

InstructionDecoder& InstructionDecoder::operator=(
    InstructionDecoder&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, 0);
    insn_ = std::exchange(other.insn_, nullptr);
  }
  return *this;
}

InstructionDecoder::~InstructionDecoder() { release(); }

void InstructionDecoder::release() {
  if (insn_ != nullptr) cs_free(insn_, 1);
  insn_ = nullptr;
  if (handle_ != 0) {
    csh handle = handle_;
    cs_close(&handle);
  }
  handle_ = 0;
}

std::optional<Instruction> InstructionDecoder::decode(uint64_t addr,
                                                      CodeReader& code) {
  std::array<uint8_t, kMaxInstructionSize> buffer{};
  const std::size_t n = code.read(addr, buffer.data(), buffer.size());
  return decode(addr, buffer.data(), std::min(n, buffer.size()));
}

std::optional<Instruction> InstructionDecoder::decode(uint64_t addr,
                                                      const uint8_t* bytes,
                                                      std::size_t len) {
  if (insn_ == nullptr || bytes == nullptr || len == 0) return std::nullopt;
  const uint8_t* cursor = bytes;
  std::size_t remaining = std::min(len, kMaxInstructionSize);
  uint64_t address = addr;
  if (!cs_disasm_iter(handle_, &cursor, &remaining, &address, insn_)) {
    return std::nullopt;
  }
  return classify_capstone(handle_, *insn_);
}

std::optional<std::vector<MemoryTouch>> InstructionDecoder::footprint(
    uint64_t addr, const uint8_t* bytes, std::size_t len, const RegisterSource& regs) {
  const std::optional<Instruction> insn = decode(addr, bytes, len);
  if (!insn) return std::nullopt;
  return capstone_footprint(*insn_, *insn, regs);  // insn_ still holds its detail
}

}  // namespace decoder
