#include "stub/tracing/software_tracer_blocks.h"

#include <array>
#include <vector>

#include "decoder/instruction_history.h"

namespace stub::tracing {

namespace {

// Reading one instruction at a time would cost a /proc/PID/mem read per
// instruction; a window of code is decoded from memory in one read instead.
constexpr std::size_t kWindow = 512;

}  // namespace

std::optional<int64_t> plain_rsp_delta(const decoder::Instruction& insn) {
  const decoder::StackEffect& e = insn.stack;
  if (e.clobbers_rsp || e.clobbers_rbp) return std::nullopt;
  switch (e.op) {
    case decoder::StackOp::None: return 0;
    case decoder::StackOp::Push: return -e.value;
    case decoder::StackOp::Pop:
    case decoder::StackOp::AdjustRsp: return e.value;
    default: return std::nullopt;
  }
}

bool reads_unrepeatable_value(const decoder::Instruction& insn) {
  for (const char* name : {"rdtsc", "rdrand", "rdseed"}) {  // rdtscp too
    if (insn.text.rfind(name, 0) == 0) return true;
  }
  return false;
}

BlockEnd BlockCache::scan(uint64_t start, decoder::CodeReader& code) {
  std::vector<uint8_t> window(kWindow);
  uint64_t window_base = start;
  std::size_t window_len = code.read(start, window.data(), window.size());
  uint64_t addr = start;
  std::optional<decoder::Instruction> last;
  std::optional<int64_t> rsp_delta = 0;
  for (std::size_t count = 0; count < kMaxScan; ++count) {
    std::size_t offset = static_cast<std::size_t>(addr - window_base);
    // Refill when the next instruction might straddle the window's end
    // (unless the window is already short: the readable range ended).
    if (window_len == window.size() && window_len - offset < decoder::kMaxInstructionSize) {
      window_base = addr;
      offset = 0;
      window_len = code.read(addr, window.data(), window.size());
    }
    std::optional<decoder::Instruction> insn;
    if (offset < window_len) {
      insn = decoder::decode_with_fallback(decoder_, addr, window.data() + offset, window_len - offset);
    }
    if (!insn) return BlockEnd{BlockEnd::Kind::Undecodable, addr, {}, std::nullopt};
    if (insn->is_control_transfer()) return BlockEnd{BlockEnd::Kind::Transfer, addr, *insn, rsp_delta};
    if (reads_unrepeatable_value(*insn)) return BlockEnd{BlockEnd::Kind::Unrepeatable, addr, *insn, rsp_delta};
    if (rsp_delta) {
      auto delta = plain_rsp_delta(*insn);
      rsp_delta = delta ? std::optional<int64_t>(*rsp_delta + *delta) : std::nullopt;
    }
    addr = insn->next_address();
    last = std::move(insn);
  }
  return BlockEnd{BlockEnd::Kind::Checkpoint, last->address, *last, std::nullopt};
}

BlockEnd BlockCache::block_end(uint64_t start, decoder::CodeReader& code) {
  auto it = ends_.find(start);
  if (it != ends_.end()) return it->second;
  BlockEnd end = scan(start, code);
  if (reads_uncached(start, end.address)) return end;
  if (end.kind != BlockEnd::Kind::Undecodable) transfers_.emplace(end.address, end.insn);
  return ends_.emplace(start, std::move(end)).first->second;
}

std::optional<decoder::Instruction> BlockCache::instruction_at(uint64_t addr, decoder::CodeReader& code) {
  auto it = transfers_.find(addr);
  if (it != transfers_.end()) return it->second;
  auto insn = decoder::decode_with_fallback(decoder_, addr, code);
  // Stepping (TraceStops::SingleStep) asks for every instruction: keep them.
  if (insn && !reads_uncached(addr, addr)) transfers_.emplace(addr, *insn);
  return insn;
}

void BlockCache::set_uncached(AddressRanges ranges) {
  uncached_ = std::move(ranges);
  std::erase_if(ends_, [&](const auto& entry) { return reads_uncached(entry.first, entry.second.address); });
  std::erase_if(transfers_, [&](const auto& entry) { return reads_uncached(entry.first, entry.first); });
}

bool BlockCache::read_code_in(uint64_t begin, uint64_t end) const {
  const auto inside = [&](uint64_t address) { return begin <= address && address < end; };
  for (const auto& [start, block] : ends_) {
    if (inside(start) || inside(block.address) || (start < begin && block.address >= end)) return true;
  }
  for (const auto& [address, insn] : transfers_) {
    if (inside(address)) return true;
  }
  return false;
}

}  // namespace stub::tracing
