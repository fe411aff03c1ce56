#include "decoder/pt_decoder.h"

#include <intel-pt.h>

#include <algorithm>

namespace decoder {
namespace {

using WalkState = PtStreamDecoder::WalkState;

// Past the last packet, libipt walks on through code that needs none
// (straight lines, direct jumps); a `jmp .` would never end. Real code
// reaches a packet-needing branch long before this.
constexpr std::size_t kMaxWalkPastData = 1 << 20;
// A fresh stream with no PSB in this many bytes is not PT we can use.
constexpr std::size_t kMaxBytesBeforePsb = 1 << 20;
// An open segment this long has lost its next PSB (hardware sends one every
// few KiB): it is given up as a loss rather than decoded again forever.
constexpr std::size_t kMaxOpenBytes = 4 << 20;
constexpr std::size_t kPsbBytes = 16;
// Instructions walked while the decoder's place in the packets stays put:
// straight code and direct jumps need no packet, so code that changed
// under stored packets (a `jmp .` where a loop was) would be walked
// forever. Real code needs a packet (a conditional branch, a return)
// long before.
constexpr std::size_t kMaxWalkWithoutPacket = 1 << 20;

int read_code(uint8_t* buffer, size_t size, const pt_asid*, uint64_t ip, void* context) {
  std::size_t n = static_cast<CodeReader*>(context)->read(ip, buffer, size);
  return n == 0 ? -pte_nomap : static_cast<int>(n);
}

pt_config config_for(const uint8_t* data, std::size_t size) {
  pt_config config;
  pt_config_init(&config);
  config.begin = const_cast<uint8_t*>(data);  // libipt only reads it
  config.end = config.begin + size;
  return config;
}

// A PSB in the stream and, once its PSB+ is complete, where execution stood
// (its FUP; none when tracing was off).
struct PsbMark {
  std::size_t offset = 0;
  std::optional<uint64_t> fup;
  bool complete = false;
};

// The last IP is 0 after a PSB, so a PSB+ FUP's IP is its payload.
std::optional<uint64_t> psb_fup_ip(const pt_packet_ip& ip) {
  switch (ip.ipc) {
    case pt_ipc_suppressed: return std::nullopt;
    case pt_ipc_sext_48:
      return (ip.ip & (uint64_t{1} << 47)) ? (ip.ip | ~((uint64_t{1} << 48) - 1)) : (ip.ip & ((uint64_t{1} << 48) - 1));
    default: return ip.ip;
  }
}

// Every PSB, found by walking the packets (a PSB's bytes inside another
// packet's payload are not one).
std::vector<PsbMark> scan_psbs(const std::vector<uint8_t>& bytes) {
  std::vector<PsbMark> marks;
  if (bytes.size() < kPsbBytes) return marks;
  pt_config config = config_for(bytes.data(), bytes.size());
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&config);
  if (dec == nullptr) return marks;
  bool in_psb = false;
  int status = pt_pkt_sync_forward(dec);
  while (status >= 0) {
    uint64_t offset = 0;
    (void)pt_pkt_get_offset(dec, &offset);
    pt_packet packet;
    status = pt_pkt_next(dec, &packet, sizeof packet);
    if (status < 0) {
      if (status == -pte_eos) break;
      if (in_psb) marks.pop_back();  // a PSB+ that does not parse is no place to start
      in_psb = false;
      status = pt_pkt_sync_forward(dec);
      continue;
    }
    if (packet.type == ppt_psb) {
      if (in_psb) marks.pop_back();
      marks.push_back({static_cast<std::size_t>(offset), std::nullopt, false});
      in_psb = true;
    } else if (in_psb && packet.type == ppt_fup) {
      marks.back().fup = psb_fup_ip(packet.payload.ip);
    } else if (in_psb && packet.type == ppt_psbend) {
      marks.back().complete = true;
      in_psb = false;
    }
  }
  pt_pkt_free_decoder(dec);
  return marks;
}

// The rules of pt_decoder.h, applied to instructions and events as
// libipt hands them out.
class Walk {
 public:
  explicit Walk(const WalkState& state) : s_(state) {}

  void instruction(const pt_insn& insn) {
    arrive(insn.ip, s_.last_insn);
    s_.last_insn = insn.ip;
    s_.expect = insn.ip + insn.size;
    s_.stopped_at = 0;
    // These always transfer, even to the next instruction (as a BTS
    // record says). Far transfers are told by events.
    s_.jumped = insn.iclass == ptic_call || insn.iclass == ptic_return || insn.iclass == ptic_jump;
  }

  // True for the events after which everything so far is confirmed.
  bool event(const pt_event& ev) {
    switch (ev.type) {
      case ptev_enabled: {
        uint64_t from = s_.stopped_at != 0 ? s_.stopped_at : s_.last_insn;
        // A PSB+ that says tracing is on somewhere else than we are: we
        // do not know how it got there.
        if (ev.status_update && s_.expect != ev.variant.enabled.ip) from = 0;
        arrive(ev.variant.enabled.ip, from);
        s_.expect = ev.variant.enabled.ip;
        s_.stopped_at = 0;
        s_.jumped = false;
        return false;
      }
      case ptev_disabled: return true;  // after the last instruction (a syscall, say)
      case ptev_async_disabled:
        // Execution got to `at` (perhaps by a branch), which has not run.
        reach(ev.variant.async_disabled.at);
        s_.stopped_at = ev.variant.async_disabled.at;
        return true;
      case ptev_async_branch:
        reach(ev.variant.async_branch.from);
        items_.push_back({false, {ev.variant.async_branch.from, ev.variant.async_branch.to}});
        s_.last_insn = ev.variant.async_branch.from;
        s_.expect = ev.variant.async_branch.to;
        s_.stopped_at = 0;
        s_.jumped = false;
        return false;
      case ptev_overflow:
        lost();
        return true;
      default: return false;  // paging, exec mode, timing: no control flow
    }
  }

  // The branch just before a loss (its target unknown to us: libipt does
  // not say where the last instruction went) is part of the loss.
  void lost() { s_ = WalkState{0, 0, 0, true, false}; }

  const WalkState& state() const { return s_; }
  std::vector<PtItem>& items() { return items_; }

 private:
  // Execution continues at `x`; `from` is the instruction that sent it
  // there, if a branch did.
  void arrive(uint64_t x, uint64_t from) {
    if (s_.gap) {
      items_.push_back({true, {0, x}});
      s_.gap = false;
    } else if (s_.expect == x && !s_.jumped) {
      return;
    } else if (from != 0) {
      items_.push_back({false, {from, x}});
    } else {
      items_.push_back({true, {0, x}});  // we do not know how it got here
    }
  }

  // Execution stands at `x` before running it, without an instruction.
  void reach(uint64_t x) {
    arrive(x, s_.last_insn);
    s_.expect = x;
    s_.jumped = false;
  }

  WalkState s_;
  std::vector<PtItem> items_;
};

struct SegmentResult {
  PtStreamDecoder::Stats stats;  // errors and overflows only
  std::vector<PtItem> items;
  std::size_t confirmed = 0;  // items[0, confirmed) cannot change with more data
  WalkState end;
  bool reached_next = false;  // the walk stopped at `next`
  uint64_t code_hash = kCodeHashStart;  // of every instruction walked, in order
};

// Decodes one segment from `start`. `next` (for a complete segment): where
// the next segment's PSB+ says execution stood, where the walk past this
// segment's last packet stops.
SegmentResult decode_segment(const uint8_t* data, std::size_t size, const WalkState& start,
                             const std::optional<uint64_t>* next, CodeReader& code,
                             std::size_t max_past_data = kMaxWalkPastData) {
  SegmentResult out;
  PtStreamDecoder::Stats& stats = out.stats;
  Walk walk(start);
  pt_config config = config_for(data, size);
  pt_insn_decoder* dec = pt_insn_alloc_decoder(&config);
  if (dec == nullptr) {
    walk.lost();
    out.end = walk.state();
    return out;
  }
  (void)pt_image_set_callback(pt_insn_get_image(dec), read_code, &code);
  std::size_t confirmed = 0;
  std::size_t walked_past_data = 0;
  std::size_t walked_without_packet = 0;
  uint64_t packets_at = 0;  // the decoder's offset in the packets
  int status = pt_insn_sync_forward(dec);
  for (;;) {
    if (status < 0) {
      if (status == -pte_eos) break;
      ++stats.errors;  // corrupt or inconsistent with the code: sync at the next PSB
      walk.lost();
      status = pt_insn_sync_forward(dec);
      continue;
    }
    if ((status & pts_event_pending) != 0) {
      pt_event ev;
      status = pt_insn_event(dec, &ev, sizeof ev);
      if (status >= 0 && ev.type == ptev_overflow) ++stats.overflows;
      if (status >= 0 && walk.event(ev)) confirmed = walk.items().size();
      continue;
    }
    const bool past_data = (status & pts_eos) != 0;
    pt_insn insn;
    status = pt_insn_next(dec, &insn, sizeof insn);
    if (status < 0) {
      // An instruction needing trace past the last packet (an indirect
      // branch, a syscall) fails to decode, its ip still given.
      if (past_data && next != nullptr && next->has_value() && insn.ip == **next) {
        out.reached_next = true;
        break;
      }
      continue;
    }
    if (past_data) {
      if (next != nullptr && next->has_value() && insn.ip == **next) {
        out.reached_next = true;
        break;  // the next segment goes on from here
      }
      if (++walked_past_data > max_past_data) break;
    }
    walk.instruction(insn);
    out.code_hash = code_hash(out.code_hash, insn.raw, insn.size);
    if ((status & pts_eos) == 0) confirmed = walk.items().size();
    uint64_t offset = 0;
    if (pt_insn_get_offset(dec, &offset) >= 0 && offset != packets_at) {
      packets_at = offset;
      walked_without_packet = 0;
    } else if (++walked_without_packet > kMaxWalkWithoutPacket) {
      ++stats.errors;  // as a decode error: sync at the next PSB
      walk.lost();
      walked_without_packet = 0;
      status = pt_insn_sync_forward(dec);
    }
  }
  pt_insn_free_decoder(dec);
  out.items = std::move(walk.items());
  out.confirmed = next != nullptr ? out.items.size() : confirmed;
  out.end = walk.state();
  return out;
}

// A sealed segment's walk past its last packet runs to its end target
// through straight code and direct branches only: a few blocks' worth.
constexpr std::size_t kMaxSegmentWalkPastData = 1 << 16;

// Whether a complete segment can go to the store as its packets: it
// decoded cleanly from a known place to the next PSB+'s FUP. Items handed
// out while it was open (`emitted`) are its first ones: the store checks
// they are the same before it replaces them.
bool whole_segment(const SegmentResult& done, const WalkState& start, std::size_t emitted) {
  if (emitted > done.items.size() || start.gap || start.expect == 0 || !done.reached_next) return false;
  if (done.stats.errors != 0 || done.stats.overflows != 0 || done.items.empty()) return false;
  for (const PtItem& item : done.items) {
    if (item.gap) return false;
  }
  return !done.end.gap && done.end.last_insn != 0;
}

void emit(const SegmentResult& result, std::size_t from, std::size_t to, std::vector<PtItem>& out) {
  for (std::size_t i = from; i < to && i < result.items.size(); ++i) out.push_back(result.items[i]);
}

}  // namespace

std::optional<PtSegmentBranches> decode_pt_segment(const uint8_t* data, std::size_t size, uint64_t begin,
                                                   uint64_t end, CodeReader& code) {
  WalkState start;
  start.expect = begin;
  const std::optional<uint64_t> next = end;
  SegmentResult result = decode_segment(data, size, start, &next, code, kMaxSegmentWalkPastData);
  if (result.stats.errors != 0 || result.stats.overflows != 0 || !result.reached_next) return std::nullopt;
  PtSegmentBranches out;
  out.branches.reserve(result.items.size() + 1);
  for (const PtItem& item : result.items) {
    if (item.gap) return std::nullopt;
    out.branches.push_back(item.branch);
  }
  // The branch into `end` is the next segment's to tell in a stream; here
  // it ends this one.
  const WalkState& s = result.end;
  if (s.gap || s.last_insn == 0) return std::nullopt;
  if (s.jumped || s.expect != end) out.branches.push_back(Branch{s.last_insn, end});
  out.code_hash = result.code_hash;
  return out;
}

// Adds what a decode of the open segment found beyond what earlier decodes
// of it did.
void PtStreamDecoder::count(const Stats& segment) {
  stats_.errors += segment.errors - std::min(segment.errors, open_counted_.errors);
  stats_.overflows += segment.overflows - std::min(segment.overflows, open_counted_.overflows);
}

void PtStreamDecoder::set_origin(uint64_t origin) {
  if (open_.empty() && fresh_ && state_.last_insn == 0 && !state_.gap) state_.expect = origin;
}

std::vector<PtItem> PtStreamDecoder::decode(const std::vector<PtPiece>& pieces, CodeReader& code,
                                            std::vector<PtWholeSegment>* segments) {
  std::vector<PtItem> out;
  segments_ = segments;
  bool fed = false;
  for (const PtPiece& piece : pieces) {
    if (piece.lost) {
      lose(code, out);
      fed = false;
    } else {
      open_.insert(open_.end(), piece.bytes.begin(), piece.bytes.end());
      fed = fed || !piece.bytes.empty();
    }
  }
  if (fed) decode_open(code, out);
  for (const PtItem& item : out) {
    if (item.gap && item.branch.to != 0) gap_told_ = false;
  }
  // A loss nothing decodable follows yet: the newest block must not look
  // joined to what came before it. (When decoding resumes, its gap item
  // comes too: the store then shows one gap twice, never none.)
  if (tail_gap_ && !gap_told_) {
    out.push_back({true, {0, 0}});
    gap_told_ = true;
  }
  segments_ = nullptr;
  return out;
}

void PtStreamDecoder::lose(CodeReader& code, std::vector<PtItem>& out) {
  decode_open(code, out);
  ++stats_.losses;
  open_counted_ = Stats{};
  tail_gap_ = true;
  state_ = WalkState{0, 0, 0, true, false};
  open_.clear();
  open_emitted_ = 0;
  fresh_ = true;
}

// A loss cuts the open segment: only what its packets confirmed is handed
// out, then as after any decode.
void PtStreamDecoder::decode_open(CodeReader& code, std::vector<PtItem>& out) {
  std::vector<PsbMark> marks = scan_psbs(open_);
  if (fresh_) {
    if (marks.empty()) {
      if (open_.size() > kMaxBytesBeforePsb) {
        // Keep what could be the start of a PSB split across pieces.
        std::size_t drop = open_.size() - (kPsbBytes - 1);
        stats_.skipped_bytes += drop;
        open_.erase(open_.begin(), open_.begin() + static_cast<long>(drop));
        state_ = WalkState{0, 0, 0, true, false};
      }
      tail_gap_ = state_.gap;
      return;
    }
    std::size_t first = marks.front().offset;
    if (first > 0) {
      stats_.skipped_bytes += first;
      state_ = WalkState{0, 0, 0, true, false};  // what ran before the first PSB is lost
      open_.erase(open_.begin(), open_.begin() + static_cast<long>(first));
      for (PsbMark& m : marks) m.offset -= first;
    }
    fresh_ = false;
  }
  std::size_t base = 0;  // where the open segment starts in open_
  for (const PsbMark& mark : marks) {
    if (mark.offset <= base) continue;
    if (!mark.complete) break;
    SegmentResult done = decode_segment(open_.data() + base, mark.offset - base, state_, &mark.fup, code);
    if (segments_ != nullptr && whole_segment(done, state_, open_emitted_)) {
      // The branch into the next PSB+'s FUP ends this segment (as
      // decode_pt_segment reads it), so the next one starts there with
      // nothing pending.
      PtWholeSegment item;
      item.at = out.size();
      item.handed_out = open_emitted_;
      item.packets.assign(open_.begin() + static_cast<long>(base), open_.begin() + static_cast<long>(mark.offset));
      for (const PtItem& b : done.items) item.branches.push_back(b.branch);
      if (done.end.jumped || done.end.expect != *mark.fup) item.branches.push_back({done.end.last_insn, *mark.fup});
      segments_->push_back(std::move(item));
      done.end.expect = *mark.fup;
      done.end.jumped = false;
      done.end.stopped_at = 0;
    } else {
      emit(done, open_emitted_, done.items.size(), out);
    }
    count(done.stats);
    open_counted_ = Stats{};
    state_ = done.end;
    open_emitted_ = 0;
    base = mark.offset;
  }
  open_.erase(open_.begin(), open_.begin() + static_cast<long>(base));
  SegmentResult open = decode_segment(open_.data(), open_.size(), state_, nullptr, code);
  count(open.stats);  // decoded again at every call: only what is new counts
  open_counted_ = open.stats;
  if (open.confirmed > open_emitted_) {
    emit(open, open_emitted_, open.confirmed, out);
    open_emitted_ = open.confirmed;
  }
  tail_gap_ = open.end.gap;
  if (open_.size() > kMaxOpenBytes) {
    stats_.skipped_bytes += open_.size();
    state_ = WalkState{0, 0, 0, true, false};
    open_.clear();
    open_emitted_ = 0;
    open_counted_ = Stats{};
    fresh_ = true;
    tail_gap_ = true;
  }
}

}  // namespace decoder
