#include "stub/session/btrace_pt_trace.h"

#include <algorithm>
#include <unordered_map>

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"

namespace stub::session {

namespace {

// Code bytes of the stopped program a page at a time (breakpoints hidden):
// a trace walks the same few pages over and over, and each process read is
// a system call.
class ProcessCode final : public decoder::CodeReader {
 public:
  explicit ProcessCode(process::Process& process) : process_(process) {}

  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    std::size_t done = 0;
    while (done < len) {
      const uint64_t at = addr + done;
      const std::vector<uint8_t>& page = page_at(at & ~kPageMask);
      const std::size_t offset = static_cast<std::size_t>(at & kPageMask);
      if (offset >= page.size()) break;
      const std::size_t n = std::min(len - done, page.size() - offset);
      std::copy_n(page.data() + offset, n, out + done);
      done += n;
      if (page.size() < kPageSize) break;  // the mapping ended inside the page
    }
    return done;
  }

 private:
  static constexpr uint64_t kPageSize = 4096;
  static constexpr uint64_t kPageMask = kPageSize - 1;

  const std::vector<uint8_t>& page_at(uint64_t page) {
    auto it = pages_.find(page);
    if (it != pages_.end()) return it->second;
    auto bytes = process_.read_memory(page, kPageSize);
    return pages_.emplace(page, bytes ? std::move(*bytes) : std::vector<uint8_t>{}).first->second;
  }

  process::Process& process_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};

}  // namespace

btstub::Expected<std::vector<uint8_t>> pt_packets(process::Process& process, const decoder::BlockTrace& trace,
                                                  const std::optional<PtStart>& start, uint64_t pc) {
  auto insns = decoder::InstructionDecoder::create();
  if (!insns) return insns.error();
  ProcessCode code(process);
  decoder::BlockCache cache(*insns, code);
  decoder::PtEncodeOptions options;
  // A trace that was running before gdb turned it on (whole-program
  // recording) is shown from that point, as a BTS trace is through gdb's
  // delta reads and as a fresh perf buffer would be.
  const bool whole = start && start->sequence >= trace.first_sequence() && start->sequence <= trace.end_sequence();
  options.starts_tracing = whole;
  std::vector<decoder::Block> blocks = trace.blocks(whole ? start->sequence : trace.first_sequence(), pc);
  if (whole) blocks.front().begin = start->pc;
  auto stream = decoder::encode_pt(blocks, cache, options);
  if (!stream) return stream.error();
  return std::move(stream->bytes);
}

}  // namespace stub::session
