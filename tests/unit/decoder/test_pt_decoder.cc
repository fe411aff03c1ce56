// decoder/pt_decoder.h: PT streams written by libipt's encoder (through
// decoder/pt_encoder, or packet by packet) from known blocks decode back to
// exactly the branches between those blocks, whole or in pieces; corrupt
// bytes, an overflow and lost pieces are gaps that say where decoding
// resumed; tracing off and on around a syscall is not a gap.
#include <catch2/catch.hpp>
#include <intel-pt.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/pt_decoder.h"
#include "decoder/pt_encoder.h"
#include "pt_program.h"

namespace Catch {
template <>
struct StringMaker<decoder::PtItem> {
  static std::string convert(const decoder::PtItem& i) {
    char text[64];
    std::snprintf(text, sizeof text, "%s%#lx->%#lx", i.gap ? "gap " : "", static_cast<unsigned long>(i.branch.from),
                  static_cast<unsigned long>(i.branch.to));
    return text;
  }
};
}  // namespace Catch

namespace test_pt_decoder {  // this file's own names, apart in a unity build

using decoder::Block;
using decoder::Branch;
using decoder::PtItem;
using decoder::PtPiece;
using pt_program::B;
using pt_program::blocks;
using pt_program::kCode;

namespace {

// The run of test_pt_encoder.cc, the thread stopped at B+0x2b; the syscall
// at B+0x22 runs inside a block (tracing off and on again around it).
const std::vector<Block> kRun = blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15},
                                        {0x33, 0x33}, {0x17, 0x1e}, {0x22, 0x27}, {0x2a, 0x2b}});

// The branches a BlockTrace holds for `bl`: from each block's end to the
// next one's begin.
std::vector<PtItem> branches_of(const std::vector<Block>& bl) {
  std::vector<PtItem> out;
  for (std::size_t i = 0; i + 1 < bl.size(); ++i) out.push_back({false, {bl[i].end, bl[i + 1].begin}});
  return out;
}

// kRun 50 times over, each pass sent back to the start from B+0x2b (an
// asynchronous branch), so that a small PSB period gives many segments.
std::vector<Block> long_run() {
  std::vector<Block> bl;
  for (int i = 0; i < 50; ++i) bl.insert(bl.end(), kRun.begin(), kRun.end());
  bl.push_back(Block{B, B});
  return bl;
}

struct Fixture {
  decoder::InstructionDecoder insns = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code{B, kCode.data(), kCode.size()};
  decoder::BlockCache cache{insns, code};

  std::vector<uint8_t> encode(const std::vector<Block>& bl, decoder::PtEncodeOptions options = {}) {
    auto stream = decoder::encode_pt(bl, cache, options);
    REQUIRE(stream.ok());
    return stream->bytes;
  }
};

PtPiece piece(const std::vector<uint8_t>& bytes, std::size_t from, std::size_t to) {
  return PtPiece{false, std::vector<uint8_t>(bytes.begin() + static_cast<long>(from),
                                             bytes.begin() + static_cast<long>(to))};
}

std::vector<std::size_t> psb_offsets(const std::vector<uint8_t>& bytes) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 16 <= bytes.size(); ++i) {
    if (bytes[i] == 0x02 && bytes[i + 1] == 0x82 && bytes[i + 2] == 0x02 && bytes[i + 3] == 0x82) {
      out.push_back(i);
      i += 15;
    }
  }
  return out;
}

std::size_t count_gaps(const std::vector<PtItem>& items) {
  return static_cast<std::size_t>(std::count_if(items.begin(), items.end(), [](const PtItem& i) { return i.gap; }));
}

bool is_suffix(const std::vector<PtItem>& part, const std::vector<PtItem>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.end() - static_cast<long>(part.size()));
}

bool is_prefix(const std::vector<PtItem>& part, const std::vector<PtItem>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

}  // namespace

TEST_CASE("PT decode: the encoder's stream gives back the branches between its blocks") {
  Fixture f;
  const std::vector<Block> runs[] = {
      kRun,
      // a signal after the syscall, its handler's rt_sigreturn back
      blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}, {0x33, 0x33}, {0x17, 0x1e},
              {0x22, 0x24}, {0x34, 0x3b}, {0x24, 0x27}, {0x2a, 0x2b}}),
      // a faulting ud2 sent to its handler
      blocks({{0x17, 0x1e}, {0x20, 0x20}, {0x34, 0x3b}, {0x22, 0x27}, {0x2a, 0x2b}})};
  const auto& blocks_in = runs[GENERATE(0, 1, 2)];
  decoder::PtStreamDecoder dec(blocks_in.front().begin);
  auto items = dec.decode({PtPiece{false, f.encode(blocks_in)}}, f.code);
  CHECK(items == branches_of(blocks_in));
  CHECK(dec.stats().errors == 0);
  // Nothing is held back: the stream ends where tracing stopped.
  CHECK(dec.decode({}, f.code).empty());
}

TEST_CASE("PT decode: a stream cut into pieces anywhere, even inside packets, decodes the same") {
  Fixture f;
  const auto bl = long_run();
  const auto bytes = f.encode(bl, {.psb_period = 64});
  REQUIRE(psb_offsets(bytes).size() > 10);
  const auto expected = branches_of(bl);
  auto step = GENERATE(1, 7, 33, 500);
  decoder::PtStreamDecoder dec(B);
  std::vector<PtItem> items;
  std::size_t most_pending = 0;
  for (std::size_t at = 0; at < bytes.size(); at += static_cast<std::size_t>(step)) {
    auto got = dec.decode({piece(bytes, at, std::min(bytes.size(), at + static_cast<std::size_t>(step)))}, f.code);
    items.insert(items.end(), got.begin(), got.end());
    most_pending = std::max(most_pending, dec.pending_bytes());
    // Whatever has been handed out is the start of the history, never a guess.
    REQUIRE(is_prefix(items, expected));
  }
  CHECK(items == expected);
  CHECK(dec.stats().errors == 0);
  // Only the open segment is kept between calls.
  CHECK(most_pending < 64 + 2 * static_cast<std::size_t>(step) + 64);
}

TEST_CASE("PT decode: a wrapped buffer starts mid-trace; decoding starts at its first PSB, after a gap") {
  Fixture f;
  const auto bl = long_run();
  const auto bytes = f.encode(bl, {.psb_period = 64});
  const auto psbs = psb_offsets(bytes);
  REQUIRE(psbs.size() > 3);
  decoder::PtStreamDecoder dec;  // where the thread was is not known
  auto items = dec.decode({piece(bytes, psbs[2] - 5, bytes.size())}, f.code);
  REQUIRE(items.size() > 2);
  CHECK(items.front().gap);
  CHECK(count_gaps(items) == 1);
  CHECK(dec.stats().skipped_bytes == 5);
  // From there on, the history's tail; the gap says where it resumed.
  std::vector<PtItem> rest(items.begin() + 1, items.end());
  const auto expected = branches_of(bl);
  REQUIRE(is_suffix(rest, expected));
  std::size_t first = expected.size() - rest.size();
  // The block the gap leads into ends at the first branch after it.
  CHECK(items.front().branch.to >= expected[first - 1].branch.to);
  CHECK(items.front().branch.to <= rest.front().branch.from);
}

TEST_CASE("PT decode: corrupt bytes are a gap and decoding syncs again at the next PSB") {
  Fixture f;
  const auto bl = long_run();
  auto bytes = f.encode(bl, {.psb_period = 64});
  const auto psbs = psb_offsets(bytes);
  REQUIRE(psbs.size() > 6);
  // Garbage in the middle of a segment (0xd9 is no packet's first byte).
  for (std::size_t i = psbs[4] + 20; i < psbs[4] + 26; ++i) bytes[i] = 0xd9;
  decoder::PtStreamDecoder dec(B);
  auto items = dec.decode({PtPiece{false, bytes}}, f.code);
  CHECK(dec.stats().errors >= 1);
  REQUIRE(count_gaps(items) == 1);
  auto gap = std::find_if(items.begin(), items.end(), [](const PtItem& i) { return i.gap; });
  const auto expected = branches_of(bl);
  std::vector<PtItem> before(items.begin(), gap), after(gap + 1, items.end());
  CHECK(is_prefix(before, expected));
  CHECK(is_suffix(after, expected));
  CHECK(before.size() + after.size() < expected.size());
  CHECK(gap->branch.to != 0);  // it resumed at the next PSB's FUP
  CHECK(before.size() > 0);
  CHECK(after.size() > 0);
}

TEST_CASE("PT decode: bytes lost between pieces are a gap; a loss at the end is one too") {
  Fixture f;
  const auto bl = long_run();
  const auto bytes = f.encode(bl, {.psb_period = 64});
  const auto psbs = psb_offsets(bytes);
  decoder::PtStreamDecoder dec(B);
  auto items = dec.decode({piece(bytes, 0, psbs[3] + 9), PtPiece{true, {}}}, f.code);
  REQUIRE(!items.empty());
  CHECK(items.back() == PtItem{true, {0, 0}});  // nothing decodable after it yet
  const auto expected = branches_of(bl);
  CHECK(is_prefix(std::vector<PtItem>(items.begin(), items.end() - 1), expected));
  auto more = dec.decode({piece(bytes, psbs[6] + 3, bytes.size())}, f.code);
  REQUIRE(!more.empty());
  CHECK(more.front().gap);
  CHECK(more.front().branch.to != 0);
  CHECK(is_suffix(std::vector<PtItem>(more.begin() + 1, more.end()), expected));
  CHECK(dec.stats().losses == 1);
}

namespace {

// Packets one by one with libipt's encoder.
struct Packets {
  std::vector<uint8_t> bytes;
  void put(const pt_packet& p) {
    uint8_t buf[32];
    pt_config config;
    pt_config_init(&config);
    config.begin = buf;
    config.end = buf + sizeof buf;
    pt_encoder* enc = pt_alloc_encoder(&config);
    REQUIRE(enc != nullptr);
    int n = pt_enc_next(enc, &p);
    pt_free_encoder(enc);
    REQUIRE(n > 0);
    bytes.insert(bytes.end(), buf, buf + n);
  }
  void simple(pt_packet_type type) {
    pt_packet p{};
    p.type = type;
    put(p);
  }
  void ip(pt_packet_type type, uint64_t ip) {
    pt_packet p{};
    p.type = type;
    p.payload.ip.ipc = pt_ipc_sext_48;
    p.payload.ip.ip = ip;
    put(p);
  }
  void psb_plus() {
    simple(ppt_psb);
    pt_packet p{};
    p.type = ppt_mode;
    p.payload.mode.leaf = pt_mol_exec;
    p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
    put(p);
    simple(ppt_psbend);
  }
  void tnt(std::initializer_list<bool> bits) {
    pt_packet p{};
    p.type = ppt_tnt_8;
    p.payload.tnt.bit_size = static_cast<uint8_t>(bits.size());
    for (bool b : bits) p.payload.tnt.payload = (p.payload.tnt.payload << 1) | (b ? 1 : 0);
    put(p);
  }
};

}  // namespace

TEST_CASE("PT decode: an overflow (OVF) is a gap that resumes at its FUP") {
  Fixture f;
  Packets p;
  p.psb_plus();
  p.ip(ppt_tip_pge, B);   // tracing on at the loop
  p.tnt({true, true});    // two passes back to the loop head
  p.simple(ppt_ovf);      // ... then the internal buffers overflowed
  p.ip(ppt_fup, B + 0x2d);  // tracing resumed in func
  p.tnt({false});         // jne not taken, then ret:
  p.ip(ppt_tip, B + 0x0e);
  p.ip(ppt_fup, B + 0x15);  // stopped at the indirect call
  p.ip(ppt_tip_pgd, 0);
  decoder::PtStreamDecoder dec(B);
  auto items = dec.decode({PtPiece{false, p.bytes}}, f.code);
  CHECK(dec.stats().overflows == 1);
  CHECK(dec.stats().errors == 0);
  // The second pass's branch is part of the loss: where it went was not
  // seen before the overflow.
  CHECK(items == std::vector<PtItem>{{false, {B + 0x07, B + 0x05}},
                                     {true, {0, B + 0x2d}},
                                     {false, {B + 0x31, B + 0x0e}}});
}

TEST_CASE("PT decode: tracing off at a syscall and on again elsewhere is a branch from the syscall") {
  Fixture f;
  Packets p;
  p.psb_plus();
  p.ip(ppt_tip_pge, B + 0x34);  // the handler
  p.ip(ppt_tip_pgd, 0);         // rt_sigreturn's syscall at B+0x3b enters the kernel...
  p.ip(ppt_tip_pge, B + 0x24);  // ... which returns to where the signal came
  p.ip(ppt_fup, B + 0x27);
  p.ip(ppt_tip_pgd, 0);
  decoder::PtStreamDecoder dec(B + 0x34);
  auto items = dec.decode({PtPiece{false, p.bytes}}, f.code);
  CHECK(dec.stats().errors == 0);
  CHECK(items == std::vector<PtItem>{{false, {B + 0x3b, B + 0x24}}});
}

TEST_CASE("PT decode: a trace that starts somewhere else than the thread was begins with a gap") {
  Fixture f;
  Packets p;
  p.psb_plus();
  p.ip(ppt_tip_pge, B + 0x2d);
  p.ip(ppt_fup, B + 0x2f);
  p.ip(ppt_tip_pgd, 0);
  decoder::PtStreamDecoder dec(B);
  CHECK(dec.decode({PtPiece{false, p.bytes}}, f.code) == std::vector<PtItem>{{true, {0, B + 0x2d}}});
  decoder::PtStreamDecoder same(B + 0x2d);
  CHECK(same.decode({PtPiece{false, p.bytes}}, f.code).empty());
}

TEST_CASE("PT decode: garbage without any PSB decodes to nothing, and does not pile up") {
  Fixture f;
  decoder::PtStreamDecoder dec(B);
  std::vector<uint8_t> junk(1 << 20, 0xd9);
  CHECK(dec.decode({PtPiece{false, junk}}, f.code).empty());
  auto items = dec.decode({PtPiece{false, junk}}, f.code);
  CHECK(dec.pending_bytes() < 64);
  CHECK(items == std::vector<PtItem>{{true, {0, 0}}});
}

TEST_CASE("PT decode: an interrupt right at a branch target keeps the branch") {
  Fixture f;
  Packets p;
  p.psb_plus();
  p.ip(ppt_tip_pge, B + 0x17);
  p.ip(ppt_tip, B + 0x22);       // jmp rax to the syscall...
  p.ip(ppt_fup, B + 0x22);       // ... which an interrupt comes before
  p.ip(ppt_tip_pgd, 0);
  p.ip(ppt_tip_pge, B + 0x22);   // and the thread goes on there
  p.ip(ppt_fup, B + 0x24);
  p.ip(ppt_tip_pgd, 0);
  decoder::PtStreamDecoder dec(B + 0x17);
  auto items = dec.decode({PtPiece{false, p.bytes}}, f.code);
  CHECK(dec.stats().errors == 0);
  CHECK(items == std::vector<PtItem>{{false, {B + 0x1e, B + 0x22}}});
}

TEST_CASE("PT decode: mangled streams, cut and lost anywhere, never crash, hang or pile up") {
  Fixture f;
  const auto bl = long_run();
  const auto clean = f.encode(bl, {.psb_period = 64});
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  auto next = [&seed](uint64_t bound) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed % bound;
  };
  for (int round = 0; round < 200; ++round) {
    auto bytes = clean;
    for (uint64_t n = next(8); n > 0; --n) bytes[next(bytes.size())] = static_cast<uint8_t>(next(256));
    if (round % 4 == 0) {
      for (auto& b : bytes) b = static_cast<uint8_t>(next(256));  // nothing but noise
    }
    decoder::PtStreamDecoder dec(B);
    std::size_t items = 0;
    for (std::size_t at = 0; at < bytes.size();) {
      std::size_t len = 1 + next(200);
      std::vector<PtPiece> pieces{piece(bytes, at, std::min(bytes.size(), at + len))};
      if (next(10) == 0) pieces.push_back(PtPiece{true, {}});
      items += dec.decode(pieces, f.code).size();
      at += len;
      REQUIRE(dec.pending_bytes() <= bytes.size());
    }
    // Never more than one item per instruction the stream could hold.
    REQUIRE(items <= 2 * bl.size() + bytes.size());
  }
}

TEST_CASE("PT decode: an open segment that never meets its next PSB is given up as a gap") {
  Fixture f;
  Packets p;
  p.psb_plus();
  p.ip(ppt_tip_pge, B);
  std::vector<uint8_t> pads(5 << 20, 0x00);  // PAD packets, and no PSB
  decoder::PtStreamDecoder dec(B);
  CHECK(dec.decode({PtPiece{false, p.bytes}, PtPiece{false, pads}}, f.code) == std::vector<PtItem>{{true, {0, 0}}});
  CHECK(dec.pending_bytes() == 0);
}

}  // namespace test_pt_decoder
