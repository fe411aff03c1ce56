// gdb's `record btrace pt` over the intel-pt backend, through Session:
// a fake intel_pt PMU (tests/unit/tracing/fake_perf_seam.h) whose AUX area
// holds what a CPU writes, timing, paging and padding packets included.
// Every complete PSB-to-PSB segment must reach gdb's <raw> byte for byte,
// and libipt's decoder must find in the document what it finds in the
// CPU's stream.
#include <catch2/catch.hpp>
#include <intel-pt.h>

#include <algorithm>
#include <string>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"
#include "fake_process.h"
#include "stub/session/session.h"
#include "stub/tracing/perf_backend.h"
#include "tests/common/pt_packets.h"
#include "tests/unit/decoder/pt_program.h"
#include "tests/unit/tracing/fake_perf_seam.h"

namespace test_hardware_pt_session {  // this file's own names, apart in a unity build

namespace {

using pt_program::B;
using pt_program::kCode;
using pt_packets::psb_offsets;
using pt_packets::raw_of;

// The program's loop, func, func2, the indirect jmp, the syscall and the
// je, `n` times over (B+0x2b goes back to the start).
std::vector<decoder::Block> passes(int n) {
  const std::vector<decoder::Block> once = pt_program::blocks(
      {{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}, {0x33, 0x33}, {0x17, 0x1e},
       {0x22, 0x27}, {0x2a, 0x2b}});
  std::vector<decoder::Block> out;
  for (int i = 0; i < n; ++i) out.insert(out.end(), once.begin(), once.end());
  return out;
}

// `bytes` as a CPU would write them: the same packets, re-encoded one by
// one by libipt, with TSC, CBR and PIP in every PSB+, and TSC, CBR and PAD
// between the TNTs (packets that tell time and paging, not control flow).
std::vector<uint8_t> with_cpu_packets(const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> out(bytes.size() * 4 + 4096);
  pt_config in;
  pt_config_init(&in);
  in.begin = const_cast<uint8_t*>(bytes.data());
  in.end = in.begin + bytes.size();
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&in);
  REQUIRE(dec != nullptr);
  REQUIRE(pt_pkt_sync_set(dec, 0) == 0);
  pt_config oc;
  pt_config_init(&oc);
  oc.begin = out.data();
  oc.end = out.data() + out.size();
  pt_encoder* enc = pt_alloc_encoder(&oc);
  REQUIRE(enc != nullptr);
  uint64_t tsc = 0x1000;
  int tnts = 0;
  auto put = [&](pt_packet p) { REQUIRE(pt_enc_next(enc, &p) > 0); };
  auto timing = [&] {
    pt_packet p{};
    p.type = ppt_tsc;
    p.payload.tsc.tsc = tsc += 0x777;
    put(p);
    p = pt_packet{};
    p.type = ppt_cbr;
    p.payload.cbr.ratio = 0x20;
    put(p);
  };
  for (;;) {
    pt_packet p;
    const int status = pt_pkt_next(dec, &p, sizeof p);
    if (status == -pte_eos) break;
    REQUIRE(status >= 0);
    put(p);
    if (p.type == ppt_psb) {
      timing();
      pt_packet pip{};
      pip.type = ppt_pip;
      pip.payload.pip.cr3 = 0x1234000;
      put(pip);
    } else if (p.type == ppt_tnt_8 || p.type == ppt_tnt_64) {
      if (++tnts % 3 == 0) timing();
      pt_packet pad{};
      pad.type = ppt_pad;
      put(pad);
    }
  }
  uint64_t offset = 0;
  REQUIRE(pt_enc_get_offset(enc, &offset) == 0);
  pt_free_encoder(enc);
  pt_pkt_free_decoder(dec);
  out.resize(offset);
  return out;
}

int read_code(uint8_t* buffer, size_t size, const pt_asid*, uint64_t ip, void*) {
  if (ip < B || ip >= B + kCode.size()) return -pte_nomap;
  const std::size_t n = std::min<std::size_t>(size, B + kCode.size() - ip);
  std::copy_n(kCode.begin() + static_cast<long>(ip - B), n, buffer);
  return static_cast<int>(n);
}

// The instructions libipt's decoder finds in `packets` over the program.
std::vector<uint64_t> instructions(std::vector<uint8_t> packets) {
  return pt_packets::instructions(std::move(packets), read_code, nullptr);
}

bool contains(const std::vector<uint8_t>& haystack, const std::vector<uint8_t>& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

// The CPU's stream: 40 passes, a PSB+ every 256 bytes, tracing off at
// B+0x2b where the thread stopped; with the CPU's other packets.
std::vector<uint8_t> cpu_stream() {
  auto insns = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code{B, kCode.data(), kCode.size()};
  decoder::BlockCache cache{insns, code};
  decoder::PtEncodeOptions options;
  options.psb_period = 256;
  auto encoded = decoder::encode_pt(passes(40), cache, options);
  REQUIRE(encoded.ok());
  return with_cpu_packets(encoded->bytes);
}

// Every complete segment of `cpu_bytes` (starting at `psbs`) but the
// first is in `raw` as the CPU wrote it. The last has no PSB after it;
// the first is re-encoded on purpose: gdb's history begins at the pc it
// turned tracing on at (stub/session/btrace_pt_trace.cc).
void check_segments_after_first(const std::vector<uint8_t>& raw, const std::vector<uint8_t>& cpu_bytes,
                                const std::vector<std::size_t>& psbs) {
  for (std::size_t i = 1; i + 1 < psbs.size(); ++i) {
    const std::vector<uint8_t> segment(cpu_bytes.begin() + static_cast<long>(psbs[i]),
                                       cpu_bytes.begin() + static_cast<long>(psbs[i + 1]));
    INFO("segment " << i);
    CHECK(contains(raw, segment));
  }
}

const pid_t kTid = 100;  // FakeProcess's thread

struct HardwareFixture {
  test::FakeProcess process;
  fakeperf::FakePerfSeam seam;
  fakeperf::PcControl control;
  stub::tracing::PerfBackend backend{seam, [] {
                                       stub::tracing::PerfBackend::Options o;
                                       o.kind = stub::tracing::HardwareTrace::IntelPt;
                                       o.intel_pt_type = 8;
                                       o.config.buffer_bytes = 16 * fakeperf::kPage;
                                       return o;
                                     }()};
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  HardwareFixture() {
    for (std::size_t i = 0; i < kCode.size(); ++i) process.memory[B + i] = kCode[i];
    control.code_base = B;
    control.code = kCode;
    set_pc(B);
    backend.set_control(&control);
    session.trace_backend = &backend;
  }
  void set_pc(uint64_t pc) {
    control.pc[kTid] = pc;
    process.regs[kTid].set_u64(protocol::Amd64Reg::rip, pc);
  }
  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
};

}  // namespace

TEST_CASE("pt over intel-pt: the CPU's segments reach gdb byte for byte, timing and paging packets included",
          "[btrace]") {
  HardwareFixture f;
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  const int fd = f.backend.event_fd(kTid);
  REQUIRE(fd >= 0);

  const std::vector<uint8_t> cpu_bytes = cpu_stream();
  const std::vector<std::size_t> psbs = psb_offsets(cpu_bytes);
  REQUIRE(psbs.size() >= 4);
  REQUIRE(psbs.front() == 0);

  auto ring = f.seam.ring_writer(fd);
  auto aux = f.seam.aux_writer(fd);
  ring.aux(0, aux.write_bytes(cpu_bytes), 0);
  f.set_pc(B + 0x2b);

  const std::vector<uint8_t> raw = raw_of(f.ask("qXfer:btrace:read:all:0,fffff"));
  const auto* trace = f.backend.trace(kTid);
  REQUIRE(trace != nullptr);
  CHECK(trace->pt_chunks() == psbs.size() - 1);
  check_segments_after_first(raw, cpu_bytes, psbs);
  // gdb decodes the same instructions from the document as from the CPU's
  // stream.
  CHECK(instructions(raw) == instructions(cpu_bytes));
}

TEST_CASE("pt over intel-pt: segments a stop read in the middle of still reach gdb byte for byte", "[btrace]") {
  HardwareFixture f;
  REQUIRE(f.ask("Qbtrace:pt") == "OK");
  const int fd = f.backend.event_fd(kTid);
  REQUIRE(fd >= 0);
  const std::vector<uint8_t> cpu_bytes = cpu_stream();
  const std::vector<std::size_t> psbs = psb_offsets(cpu_bytes);
  REQUIRE(psbs.size() >= 4);
  REQUIRE(psbs.front() == 0);

  // The thread stops in the middle of every segment, and gdb reads the
  // document there (as `record instruction-history` after a step would).
  auto ring = f.seam.ring_writer(fd);
  auto aux = f.seam.aux_writer(fd);
  std::size_t done = 0;
  for (std::size_t i = 0; i < psbs.size(); ++i) {
    const std::size_t end = i + 1 < psbs.size() ? psbs[i + 1] : cpu_bytes.size();
    const std::size_t cut = psbs[i] + (end - psbs[i]) / 2;
    const std::vector<uint8_t> piece(cpu_bytes.begin() + static_cast<long>(done),
                                     cpu_bytes.begin() + static_cast<long>(cut));
    const uint64_t offset = aux.head;
    ring.aux(offset, aux.write_bytes(piece), 0);
    done = cut;
    (void)raw_of(f.ask("qXfer:btrace:read:all:0,fffff"));
  }
  const std::vector<uint8_t> rest(cpu_bytes.begin() + static_cast<long>(done), cpu_bytes.end());
  const uint64_t offset = aux.head;
  ring.aux(offset, aux.write_bytes(rest), 0);
  f.set_pc(B + 0x2b);

  const std::vector<uint8_t> raw = raw_of(f.ask("qXfer:btrace:read:all:0,fffff"));
  check_segments_after_first(raw, cpu_bytes, psbs);
  CHECK(instructions(raw) == instructions(cpu_bytes));
}

}  // namespace test_hardware_pt_session
