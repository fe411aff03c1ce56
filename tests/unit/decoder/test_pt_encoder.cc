// decoder/pt_encoder.h: the PT stream built from blocks decodes back, with
// libipt's own instruction decoder (as gdb's `record btrace pt` uses it), to
// exactly the instructions the blocks ran through.
#include <catch2/catch.hpp>
#include <intel-pt.h>

#include <algorithm>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"
#include "pt_program.h"

namespace test_pt_encoder {  // this file's own names, apart in a unity build

using decoder::Block;
using pt_program::B;
using pt_program::blocks;
using pt_program::kCode;

namespace {

std::vector<uint64_t> at(std::initializer_list<uint64_t> offsets) {
  std::vector<uint64_t> out;
  for (uint64_t o : offsets) out.push_back(B + o);
  return out;
}

struct Fixture {
  decoder::InstructionDecoder insns = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code{B, kCode.data(), kCode.size()};
  decoder::BlockCache cache{insns, code};
};

// What libipt's instruction decoder makes of a stream, driven as gdb drives
// it (btrace.c's ftrace_add_pt): sync, then instructions and events until
// the end; an error is a gap and the decoder syncs again.
struct Decoded {
  std::vector<uint64_t> ips;
  std::vector<pt_event_type> events;
  int gaps_not_resumed = 0;  // enabled events gdb shows as "Non-contiguous trace"
  int enables = 0;           // TIP.PGE (not PSB+ status updates)
  int errors = 0;
};

int read_code(uint8_t* buffer, size_t size, const pt_asid*, uint64_t ip, void* context) {
  auto* reader = static_cast<decoder::BufferReader*>(context);
  std::size_t n = reader->read(ip, buffer, size);
  return n == 0 ? -pte_nomap : static_cast<int>(n);
}

Decoded decode(std::vector<uint8_t> bytes, decoder::BufferReader& code) {
  Decoded out;
  pt_config config;
  pt_config_init(&config);
  config.begin = bytes.data();
  config.end = bytes.data() + bytes.size();
  pt_insn_decoder* dec = pt_insn_alloc_decoder(&config);
  REQUIRE(dec != nullptr);
  REQUIRE(pt_image_set_callback(pt_insn_get_image(dec), read_code, &code) == 0);
  for (;;) {
    int status = pt_insn_sync_forward(dec);
    if (status < 0) break;
    for (;;) {
      while (status >= 0 && (status & pts_event_pending)) {
        pt_event ev;
        status = pt_insn_event(dec, &ev, sizeof ev);
        if (status < 0) break;
        out.events.push_back(ev.type);
        if (ev.type == ptev_enabled && !ev.status_update) ++out.enables;
        if (ev.type == ptev_enabled && !ev.status_update && !ev.variant.enabled.resumed && !out.ips.empty())
          ++out.gaps_not_resumed;
      }
      if (status < 0) break;
      pt_insn insn;
      status = pt_insn_next(dec, &insn, sizeof insn);
      if (status < 0) break;
      out.ips.push_back(insn.ip);
    }
    if (status == -pte_eos) break;
    ++out.errors;
  }
  pt_insn_free_decoder(dec);
  return out;
}

std::vector<uint8_t> encode(Fixture& f, const std::vector<Block>& bl, decoder::PtEncodeOptions options = {}) {
  auto stream = decoder::encode_pt(bl, f.cache, options);
  REQUIRE(stream.ok());
  return stream->bytes;
}

bool has(const Decoded& d, pt_event_type type) {
  return std::find(d.events.begin(), d.events.end(), type) != d.events.end();
}

// The whole run: a loop, a call and its ret, an indirect call, an indirect
// jmp, a syscall, a taken je; the thread stopped at B+0x2b.
const std::vector<Block> kRun = blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15},
                                        {0x33, 0x33}, {0x17, 0x1e}, {0x22, 0x27}, {0x2a, 0x2b}});
const std::vector<uint64_t> kRunInsns = at({0x00, 0x05, 0x07, 0x05, 0x07, 0x05, 0x07, 0x09, 0x2d, 0x2f, 0x31, 0x0e,
                                            0x15, 0x33, 0x17, 0x1e, 0x22, 0x24, 0x27, 0x2a});

}  // namespace

TEST_CASE("a PT stream decodes to the instructions of its blocks, up to the pc") {
  Fixture f;
  Decoded d = decode(encode(f, kRun), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == kRunInsns);
  // Tracing starts with TIP.PGE; the syscall disables and resumes it where
  // it stopped, which gdb does not show as a gap.
  CHECK(d.enables == 2);  // the start and the syscall's return
  CHECK(has(d, ptev_disabled));
  CHECK(d.gaps_not_resumed == 0);
}

TEST_CASE("PT: loop iterations are TNT bits, taken and not taken") {
  Fixture f;
  // Only the loop: 3 passes, then falls through to the call (pc).
  Decoded d = decode(encode(f, blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}})), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == at({0x00, 0x05, 0x07, 0x05, 0x07, 0x05, 0x07}));
}

TEST_CASE("PT: many conditional branches span several TNT packets") {
  Fixture f;
  std::vector<Block> bl = blocks({{0x00, 0x07}});
  std::vector<uint64_t> expected = at({0x00, 0x05, 0x07});
  for (int i = 0; i < 200; ++i) {
    bl.push_back(Block{B + 0x05, B + 0x07});
    for (uint64_t ip : at({0x05, 0x07})) expected.push_back(ip);
  }
  bl.push_back(Block{B + 0x05, B + 0x09});
  for (uint64_t ip : at({0x05, 0x07})) expected.push_back(ip);
  Decoded d = decode(encode(f, bl), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == expected);
}

TEST_CASE("PT: a signal is an asynchronous branch; the handler's rt_sigreturn comes back where it interrupted") {
  Fixture f;
  // A signal arrives after the syscall (at B+0x24, which has not run); the
  // handler returns through rt_sigreturn to B+0x24.
  std::vector<Block> bl = blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}, {0x33, 0x33},
                                  {0x17, 0x1e}, {0x22, 0x24}, {0x34, 0x3b}, {0x24, 0x27}, {0x2a, 0x2b}});
  Decoded d = decode(encode(f, bl), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == at({0x00, 0x05, 0x07, 0x05, 0x07, 0x05, 0x07, 0x09, 0x2d, 0x2f, 0x31, 0x0e, 0x15, 0x33, 0x17,
                     0x1e, 0x22, 0x34, 0x35, 0x36, 0x3b, 0x24, 0x27, 0x2a}));
  CHECK(has(d, ptev_async_branch));
  // rt_sigreturn's return elsewhere is no gap for gdb.
  CHECK(d.gaps_not_resumed == 0);
}

TEST_CASE("PT: a faulting ud2 is an asynchronous branch to the handler; it has not run") {
  Fixture f;
  // jmp rax lands on the ud2; its SIGILL handler moves the pc past it.
  std::vector<Block> bl = blocks({{0x17, 0x1e}, {0x20, 0x20}, {0x34, 0x3b}, {0x22, 0x27}, {0x2a, 0x2b}});
  Decoded d = decode(encode(f, bl), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == at({0x17, 0x1e, 0x34, 0x35, 0x36, 0x3b, 0x22, 0x24, 0x27, 0x2a}));
  CHECK(has(d, ptev_async_branch));
  CHECK(d.gaps_not_resumed == 0);
}

TEST_CASE("PT: a trace whose oldest branches were dropped starts at a PSB+ with FUP") {
  Fixture f;
  // The first three branches are gone: history begins at func.
  std::vector<Block> bl(kRun.begin() + 3, kRun.end());
  Decoded d = decode(encode(f, bl, {.starts_tracing = false}), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == std::vector<uint64_t>(kRunInsns.begin() + 8, kRunInsns.end()));
  CHECK(d.enables == 1);  // the syscall's return only
}

TEST_CASE("PT: an unknown first block (begin 0) is left out") {
  Fixture f;
  std::vector<Block> bl = kRun;
  bl.front().begin = 0;
  bl[1].begin = B + 0x05;
  Decoded d = decode(encode(f, bl, {.starts_tracing = false}), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == std::vector<uint64_t>(kRunInsns.begin() + 3, kRunInsns.end()));
}

TEST_CASE("PT: PSB+ comes again at the period and every one is a place to start decoding") {
  Fixture f;
  std::vector<Block> bl;
  std::vector<uint64_t> expected;
  for (int i = 0; i < 50; ++i) {
    bl.insert(bl.end(), kRun.begin(), kRun.end() - 1);
    bl.push_back(Block{B + 0x2a, B + 0x2b});
    // Pretend a jump back to the start: an async transfer (FUP+TIP) at 0x2b.
    expected.insert(expected.end(), kRunInsns.begin(), kRunInsns.end());
  }
  bl.push_back(Block{B + 0x00, B + 0x00});
  auto bytes = encode(f, bl, {.psb_period = 64});
  Decoded d = decode(bytes, f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips == expected);
  // Every PSB is a start: from the second one on, the decoder sees the
  // tail of the same history.
  std::vector<std::size_t> psbs;
  for (std::size_t i = 0; i + 16 <= bytes.size(); ++i) {
    if (bytes[i] == 0x02 && bytes[i + 1] == 0x82 && bytes[i + 2] == 0x02 && bytes[i + 3] == 0x82) {
      psbs.push_back(i);
      i += 15;
    }
  }
  REQUIRE(psbs.size() > 10);
  Decoded tail = decode(std::vector<uint8_t>(bytes.begin() + static_cast<long>(psbs[1]), bytes.end()), f.code);
  CHECK(tail.errors == 0);
  REQUIRE(!tail.ips.empty());
  REQUIRE(tail.ips.size() < expected.size());
  CHECK(std::equal(tail.ips.begin(), tail.ips.end(), expected.end() - static_cast<long>(tail.ips.size())));
}

TEST_CASE("PT: a block that cannot be walked becomes a gap, and decoding goes on after it") {
  Fixture f;
  // Into bytes that are not there (gdb cannot read them either), and into
  // a block that does not end on an instruction (the code changed).
  auto bad = GENERATE(std::pair<uint64_t, uint64_t>{0x1000, 0x1010}, std::pair<uint64_t, uint64_t>{0x00, 0x06});
  std::vector<Block> bl = blocks({{0x00, 0x07}, {0x05, 0x09}, bad, {0x2d, 0x31}, {0x0e, 0x15}});
  auto stream = decoder::encode_pt(bl, f.cache);
  REQUIRE(stream.ok());
  CHECK(stream->gaps == 1);
  Decoded d = decode(stream->bytes, f.code);
  // Up to the branch into it, then from func on, with a gap between that
  // gdb reports ("Non-contiguous trace").
  CHECK(d.errors == 0);
  CHECK(d.ips == at({0x00, 0x05, 0x07, 0x05, 0x07, 0x2d, 0x2f, 0x31, 0x0e}));
  CHECK(d.gaps_not_resumed == 1);
}

TEST_CASE("PT: the trace of a thread that has not moved holds no instruction") {
  Fixture f;
  Decoded d = decode(encode(f, blocks({{0x00, 0x00}})), f.code);
  CHECK(d.errors == 0);
  CHECK(d.ips.empty());
}

TEST_CASE("PT: blocks through VEX/EVEX code Capstone 4 does not know are walked") {
  // 0x500000: kmovd eax, k0 (Capstone 4 cannot decode it); test eax, eax;
  // je 0x500000; nop
  const std::vector<uint8_t> code = {0xc5, 0xfb, 0x93, 0xc0, 0x85, 0xc0, 0x74, 0xf8, 0x90};
  decoder::InstructionDecoder insns = decoder::InstructionDecoder::create().value();
  decoder::BufferReader reader{0x500000, code.data(), code.size()};
  decoder::BlockCache cache{insns, reader};
  auto stream = decoder::encode_pt({{0x500000, 0x500006}, {0x500000, 0x500008}}, cache);
  REQUIRE(stream.ok());
  CHECK(stream->gaps == 0);
  Decoded d = decode(stream->bytes, reader);
  CHECK(d.errors == 0);
  CHECK(d.ips == std::vector<uint64_t>{0x500000, 0x500004, 0x500006, 0x500000, 0x500004, 0x500006});
}

}  // namespace test_pt_encoder
