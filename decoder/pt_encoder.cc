#include "decoder/pt_encoder.h"

#include <intel-pt.h>

#include <algorithm>
#include <array>
#include <string>

namespace decoder {
namespace {

using btstub::Expected;

btstub::Error encode_error(const char* what, int status) {
  return btstub::make_error(btstub::ErrorCode::Internal,
                            std::string("Intel PT encoder: ") + what + ": " + pt_errstr(pt_errcode(status)));
}

// libipt's encoder writes into a fixed buffer; each packet goes into a small
// scratch one and is appended to the stream, so the stream can grow without
// knowing its size first.
class PacketWriter {
 public:
  static Expected<PacketWriter> create() {
    PacketWriter w;
    pt_config config;
    pt_config_init(&config);
    config.begin = w.scratch_.data();
    config.end = w.scratch_.data() + w.scratch_.size();
    w.encoder_ = pt_alloc_encoder(&config);
    if (w.encoder_ == nullptr) return encode_error("allocation", -pte_nomem);
    return w;
  }
  // Only a fresh writer is moved (out of create()); the encoder keeps
  // pointing at the scratch buffer, which a vector move does not relocate.
  PacketWriter(PacketWriter&& other) noexcept
      : scratch_(std::move(other.scratch_)),
        encoder_(other.encoder_),
        out_(std::move(other.out_)),
        last_ip_(other.last_ip_),
        tnt_bits_(other.tnt_bits_),
        tnt_count_(other.tnt_count_),
        last_psb_(other.last_psb_) {
    other.encoder_ = nullptr;
  }
  PacketWriter& operator=(PacketWriter&&) = delete;
  ~PacketWriter() {
    if (encoder_ != nullptr) pt_free_encoder(encoder_);
  }

  std::size_t size() const { return out_.size(); }
  std::vector<uint8_t> take() { return std::move(out_); }

  // The last conditional branch's outcome; bits go out as TNT packets when
  // 47 have gathered or another packet has to follow them.
  Expected<void> tnt(bool taken) {
    tnt_bits_ = (tnt_bits_ << 1) | (taken ? 1 : 0);
    if (++tnt_count_ == kMaxTntBits) return flush_tnt();
    return {};
  }

  Expected<void> flush_tnt() {
    if (tnt_count_ == 0) return {};
    pt_packet p{};
    // The oldest bit is the payload's most significant one.
    p.type = tnt_count_ <= 6 ? ppt_tnt_8 : ppt_tnt_64;
    p.payload.tnt.bit_size = static_cast<uint8_t>(tnt_count_);
    p.payload.tnt.payload = tnt_bits_;
    tnt_bits_ = 0;
    tnt_count_ = 0;
    return put(p, "TNT");
  }

  // TIP, FUP, TIP.PGE, TIP.PGD with the IP compressed against the last IP
  // sent; `suppressed` sends none (the decoder's last IP stays).
  Expected<void> ip_packet(pt_packet_type type, uint64_t ip, bool suppressed = false) {
    if (auto done = flush_tnt(); !done) return done;
    pt_packet p{};
    p.type = type;
    if (suppressed) {
      p.payload.ip.ipc = pt_ipc_suppressed;
    } else {
      p.payload.ip.ipc = compression(ip);
      p.payload.ip.ip = ip;
      last_ip_ = ip;
    }
    return put(p, "IP packet");
  }

  // PSB+: a point a decoder can start at. `ip` is where execution goes on
  // when tracing is on (FUP); PSB resets the last IP.
  Expected<void> psb_plus(bool tracing_on, uint64_t ip) {
    if (auto done = flush_tnt(); !done) return done;
    pt_packet p{};
    p.type = ppt_psb;
    if (auto done = put(p, "PSB"); !done) return done;
    last_ip_ = 0;
    if (auto done = mode_exec(); !done) return done;
    if (tracing_on) {
      if (auto done = ip_packet(ppt_fup, ip); !done) return done;
    }
    p = pt_packet{};
    p.type = ppt_psbend;
    if (auto done = put(p, "PSBEND"); !done) return done;
    last_psb_ = out_.size();
    return {};
  }

  std::size_t since_psb() const { return out_.size() - last_psb_; }

 private:
  static constexpr int kMaxTntBits = 47;  // a long TNT's capacity

  PacketWriter() = default;

  Expected<void> mode_exec() {
    pt_packet p{};
    p.type = ppt_mode;
    p.payload.mode.leaf = pt_mol_exec;
    p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
    return put(p, "MODE.Exec");
  }

  // The shortest form that rebuilds `ip` from the last IP.
  pt_ip_compression compression(uint64_t ip) const {
    if ((ip >> 16) == (last_ip_ >> 16)) return pt_ipc_update_16;
    if ((ip >> 32) == (last_ip_ >> 32)) return pt_ipc_update_32;
    if ((ip >> 48) == (last_ip_ >> 48)) return pt_ipc_update_48;
    // Canonical addresses are bits 0..47 sign-extended.
    const uint64_t upper = ip >> 47;
    if (upper == 0 || upper == (uint64_t{1} << 17) - 1) return pt_ipc_sext_48;
    return pt_ipc_full;
  }

  Expected<void> put(const pt_packet& packet, const char* what) {
    int status = pt_enc_sync_set(encoder_, 0);
    if (status < 0) return encode_error(what, status);
    status = pt_enc_next(encoder_, &packet);
    if (status < 0) return encode_error(what, status);
    out_.insert(out_.end(), scratch_.begin(), scratch_.begin() + status);
    return {};
  }

  std::vector<uint8_t> scratch_ = std::vector<uint8_t>(32);  // on the heap: the encoder keeps its address
  pt_encoder* encoder_ = nullptr;
  std::vector<uint8_t> out_;
  uint64_t last_ip_ = 0;
  uint64_t tnt_bits_ = 0;
  int tnt_count_ = 0;
  std::size_t last_psb_ = 0;
};

// Kernel entries the thread comes back from to the next instruction
// (syscall, int3): user-only tracing stops at them and starts again there.
bool enters_kernel(ControlKind kind) { return kind == ControlKind::Syscall || kind == ControlKind::Interrupt; }

// PT's return compression, as libipt's decoder applies it: every near call
// but a direct one to the next instruction (position-independent code's
// `call; pop`) pushes its return address on a stack of the last 64; a ret
// whose target is the top is one taken TNT bit and pops it; any other ret
// is a TIP and leaves the stack. The encoder keeps the same stack so that
// the bit means what the decoder will take it for. Only a stream decoded
// from its own start can use it: a decoder starting at a later PSB has not
// seen the calls.
class ReturnStack {
 public:
  void call(const ReplayInstruction& insn) {
    if (insn.kind == ControlKind::Call && insn.target == insn.next_address()) return;
    entries_[top_] = insn.next_address();
    top_ = (top_ + 1) % kSize;
    depth_ = std::min(depth_ + 1, kSize);
  }
  // True (and popped) when a ret to `to` compresses.
  bool compresses(uint64_t to) {
    if (depth_ == 0) return false;
    const std::size_t below = (top_ + kSize - 1) % kSize;
    if (entries_[below] != to) return false;
    top_ = below;
    --depth_;
    return true;
  }

 private:
  static constexpr std::size_t kSize = 64;
  std::array<uint64_t, kSize> entries_{};
  std::size_t top_ = 0;
  std::size_t depth_ = 0;
};

// The packets of a ret to `to`.
Expected<void> encode_return(PacketWriter& w, ReturnStack* returns, uint64_t to) {
  if (returns != nullptr && returns->compresses(to)) return w.tnt(true);
  return w.ip_packet(ppt_tip, to);
}

bool is_call(ControlKind kind) { return kind == ControlKind::Call || kind == ControlKind::IndirectCall; }

// Packets for an instruction inside a block: the thread went on to the next
// instruction. `returns`: null without return compression.
Expected<void> encode_inside(PacketWriter& w, const ReplayInstruction& insn, ReturnStack* returns) {
  if (returns != nullptr && is_call(insn.kind)) returns->call(insn);
  switch (insn.kind) {
    case ControlKind::ConditionalJump:
    case ControlKind::Loop:
      return w.tnt(false);
    case ControlKind::Return:
      return encode_return(w, returns, insn.next_address());
    case ControlKind::IndirectJump:
    case ControlKind::IndirectCall:
      return w.ip_packet(ppt_tip, insn.next_address());
    default:
      break;
  }
  if (enters_kernel(insn.kind)) {
    if (auto done = w.ip_packet(ppt_tip_pgd, 0, true); !done) return done;
    return w.ip_packet(ppt_tip_pge, insn.next_address());
  }
  return {};  // straight-line code, or a direct jmp/call to the next instruction
}

// Packets for the transfer from a block's last instruction (`insn`, at the
// branch's `from`) to `to`.
Expected<void> encode_transfer(PacketWriter& w, const ReplayInstruction& insn, uint64_t to, ReturnStack* returns) {
  switch (insn.kind) {
    case ControlKind::ConditionalJump:
    case ControlKind::Loop:
      if (insn.target == to) return w.tnt(true);
      break;
    case ControlKind::Jump:
      if (insn.target == to) return {};
      break;
    case ControlKind::Call:
      if (insn.target != to) break;
      if (returns != nullptr) returns->call(insn);
      return {};
    case ControlKind::IndirectCall:
      if (returns != nullptr) returns->call(insn);
      return w.ip_packet(ppt_tip, to);
    case ControlKind::IndirectJump:
      return w.ip_packet(ppt_tip, to);
    case ControlKind::Return:
      return encode_return(w, returns, to);
    case ControlKind::Syscall:
      if (to == insn.next_address()) return encode_inside(w, insn, returns);
      // The kernel went on elsewhere (rt_sigreturn, execve): a far branch
      // to there, as with kernel tracing on and the kernel's part left
      // out. TIP.PGD + TIP.PGE would be a gap to gdb ("Non-contiguous").
      return w.ip_packet(ppt_tip, to);
    default:
      break;  // a fault (ud2) or trap: the instruction did not complete
  }
  // Not where the instruction goes: the thread was sent away before it ran.
  if (auto done = w.ip_packet(ppt_fup, insn.address); !done) return done;
  return w.ip_packet(ppt_tip, to);
}

// A walkable block's packets up to its last instruction, then the
// transfer from there to `to`.
Expected<void> encode_block(PacketWriter& w, const DecodedBlock& decoded, uint64_t to, ReturnStack* returns) {
  const auto& insns = decoded.instructions;
  for (std::size_t k = 0; k + 1 < insns.size(); ++k) {
    if (auto done = encode_inside(w, insns[k], returns); !done) return done;
  }
  return encode_transfer(w, insns.back(), to, returns);
}

}  // namespace

Expected<PtStream> encode_pt(const std::vector<Block>& oldest_first, BlockCache& code,
                             const PtEncodeOptions& options) {
  PtStream out;
  std::size_t first = 0;
  if (!oldest_first.empty() && oldest_first.front().begin == 0) first = 1;  // unknown start
  if (first >= oldest_first.size()) return out;
  auto writer = PacketWriter::create();
  if (!writer) return writer.error();
  PacketWriter& w = *writer;

  // `on`: the decoder follows the execution at the current block's begin.
  const bool first_walkable = code.get(oldest_first[first]).complete;
  bool on = !options.starts_tracing && first_walkable;
  if (auto done = w.psb_plus(on, oldest_first[first].begin); !done) return done.error();
  for (std::size_t i = first; i < oldest_first.size(); ++i) {
    const Block& block = oldest_first[i];
    const DecodedBlock& decoded = code.get(block);
    if (!decoded.complete) {
      // Unreadable or changed code, a hardware trace's gap: the decoder
      // could not follow it either. Tracing is off across it.
      ++out.gaps;
      on = false;
      continue;
    }
    if (!on) {
      if (auto done = w.ip_packet(ppt_tip_pge, block.begin); !done) return done.error();
      on = true;
    }
    const auto& insns = decoded.instructions;
    const bool last = i + 1 == oldest_first.size();
    if (last && options.continues_at) {
      if (auto done = encode_block(w, decoded, *options.continues_at, nullptr); !done) return done.error();
      break;
    }
    if (last || !code.get(oldest_first[i + 1]).complete) {
      // Tracing ends before the block's last instruction: the thread
      // stopped there (it has not run), or what follows cannot be walked
      // (the decoder then shows a gap, "Non-contiguous trace").
      for (std::size_t k = 0; k + 1 < insns.size(); ++k) {
        if (auto done = encode_inside(w, insns[k], nullptr); !done) return done.error();
      }
      if (auto done = w.ip_packet(ppt_fup, block.end); !done) return done.error();
      if (auto done = w.ip_packet(ppt_tip_pgd, 0, true); !done) return done.error();
      on = false;
      continue;
    }
    const uint64_t to = oldest_first[i + 1].begin;
    if (auto done = encode_block(w, decoded, to, nullptr); !done) return done.error();
    if (w.since_psb() >= options.psb_period) {
      if (auto done = w.psb_plus(true, to); !done) return done.error();
    }
  }
  if (auto done = w.flush_tnt(); !done) return done.error();  // bits of a last transfer (continues_at)
  out.bytes = w.take();
  return out;
}

}  // namespace decoder

namespace decoder {

Expected<std::optional<PtSegment>> encode_pt_segment(uint64_t begin, const std::vector<Branch>& branches,
                                                     BlockCache& code) {
  PtSegment out;
  if (branches.empty()) return std::optional<PtSegment>{};
  auto writer = PacketWriter::create();
  if (!writer) return writer.error();
  PacketWriter& w = *writer;
  if (auto done = w.psb_plus(true, begin); !done) return done.error();
  ReturnStack returns;
  uint64_t block_begin = begin;
  for (const Branch& branch : branches) {
    const DecodedBlock& decoded = code.get(Block{block_begin, branch.from});
    if (!decoded.complete) return std::optional<PtSegment>{};
    if (auto done = encode_block(w, decoded, branch.to, &returns); !done) return done.error();
    block_begin = branch.to;
  }
  if (auto done = w.flush_tnt(); !done) return done.error();
  out.bytes = w.take();
  return std::optional<PtSegment>{std::move(out)};
}

}  // namespace decoder
