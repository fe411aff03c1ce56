// The intel-pt backend end to end over the fake seam: a fake intel_pt PMU
// whose AUX area holds PT packets libipt's encoder wrote (decoder/pt_encoder)
// for a small known execution; the backend's store must hold exactly the
// blocks the packets were encoded from. Also the intel_pt reader's gaps, and
// the probe, auto's choice and the refusal where the PMU is missing.
#include <catch2/catch.hpp>

#include "decoder/block_cache.h"
#include "decoder/pt_encoder.h"
#include "../decoder/pt_program.h"
#include "fake_perf_seam.h"
#include "stub/server/options.h"
#include "stub/tracing/backend_probe.h"
#include "stub/tracing/intel_pt_reader.h"
#include "stub/tracing/perf_backend.h"
#include "tests/common/pt_packets.h"

namespace test_intel_pt_backend {  // this file's own names, apart in a unity build

using decoder::Block;
using pt_program::B;
using pt_program::blocks;
using pt_program::kCode;
using fakeperf::FakePerfSeam;
using fakeperf::kPage;
using pt_packets::psb_offsets;
using stub::tracing::HardwareTrace;
using stub::tracing::PerfBackend;
using stub::tracing::TraceBackendChoice;

namespace {

const pid_t kTid = 4242;
// The thread runs the loop, func, and stops at the indirect call (B+0x15);
// resumed, it runs func2, the indirect jmp, the syscall, the je, and stops
// at B+0x2b.
const std::vector<Block> kFirst = blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}});
const std::vector<Block> kSecond = blocks({{0x15, 0x15}, {0x33, 0x33}, {0x17, 0x1e}, {0x22, 0x27}, {0x2a, 0x2b}});
const std::vector<Block> kWhole =
    blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x15}, {0x33, 0x33}, {0x17, 0x1e},
            {0x22, 0x27}, {0x2a, 0x2b}});

// What the CPU writes for `bl` (tracing on at the first block's begin, off
// at the last block's end: the thread entered the kernel to stop there).
std::vector<uint8_t> packets(const std::vector<Block>& bl) {
  auto insns = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code{B, kCode.data(), kCode.size()};
  decoder::BlockCache cache{insns, code};
  auto stream = decoder::encode_pt(bl, cache);
  REQUIRE(stream.ok());
  REQUIRE(stream->gaps == 0);
  return stream->bytes;
}

PerfBackend::Options options(uint64_t bytes = 4 * kPage) {
  PerfBackend::Options o;
  o.kind = HardwareTrace::IntelPt;
  o.intel_pt_type = 8;
  o.config.buffer_bytes = bytes;
  return o;
}

struct Traced {
  FakePerfSeam seam;
  fakeperf::PcControl control;
  PerfBackend backend;
  int fd = -1;
  explicit Traced(uint64_t bytes = 4 * kPage) : backend(seam, options(bytes)) {
    control.pc[kTid] = B;
    control.code_base = B;
    control.code = kCode;
    backend.set_control(&control);
    REQUIRE(backend.enable(kTid));
    fd = backend.event_fd(kTid);
  }
};

}  // namespace

TEST_CASE("intel-pt end to end: PMU event, AUX area of PT packets, the blocks they were encoded from") {
  Traced t;
  REQUIRE(t.backend.name() == "intel-pt");
  const auto& event = t.seam.events.at(t.fd);
  REQUIRE(event.attr.type == 8);  // the PMU's type from sysfs
  // pt (config:0) and branch (config:13), user space only.
  REQUIRE(event.attr.config == ((uint64_t{1} << 0) | (uint64_t{1} << 13)));
  REQUIRE(event.attr.exclude_kernel == 1);
  REQUIRE(event.ring_writable);  // we own the tails
  REQUIRE(event.aux != nullptr);
  REQUIRE(t.backend.thread_config(kTid)->buffer_bytes == 4 * kPage);

  auto ring = t.seam.ring_writer(t.fd);
  auto cpu = t.seam.aux_writer(t.fd);
  REQUIRE(t.backend.trace(kTid)->size() == 0);
  uint64_t size = cpu.write_bytes(packets(kFirst));
  ring.aux(0, size, 0);
  const auto* trace = t.backend.trace(kTid);
  REQUIRE(trace->blocks(0, B + 0x15) == kFirst);
  REQUIRE(ring.header->aux_tail == size);
  REQUIRE(ring.header->data_tail == ring.header->data_head);

  // Resumed, the thread runs on; the kernel announces the next chunk.
  uint64_t offset = cpu.head;
  size = cpu.write_bytes(packets(kSecond));
  ring.aux(offset, size, 0);
  trace = t.backend.trace(kTid);
  REQUIRE(trace->blocks(0, B + 0x2b) == kWhole);
  REQUIRE(t.backend.trace(kTid)->end_sequence() == kWhole.size() - 1);  // nothing new: nothing added
}

TEST_CASE("intel-pt: a chunk split inside a packet continues in the next one") {
  Traced t;
  auto ring = t.seam.ring_writer(t.fd);
  auto cpu = t.seam.aux_writer(t.fd);
  auto bytes = packets(kWhole);
  std::vector<uint8_t> first(bytes.begin(), bytes.begin() + 21), rest(bytes.begin() + 21, bytes.end());
  ring.aux(0, cpu.write_bytes(first), 0);
  (void)t.backend.trace(kTid);
  ring.aux(21, cpu.write_bytes(rest), 0);
  REQUIRE(t.backend.trace(kTid)->blocks(0, B + 0x2b) == kWhole);
}

TEST_CASE("intel-pt: a TRUNCATED chunk and bytes never announced are a gap, then decoding resumes") {
  Traced t;
  auto ring = t.seam.ring_writer(t.fd);
  auto cpu = t.seam.aux_writer(t.fd);
  uint64_t size = cpu.write_bytes(packets(kFirst));
  ring.aux(0, size, PERF_AUX_FLAG_TRUNCATED);
  cpu.head += 100;  // lost while the driver waited for room
  uint64_t offset = cpu.head;
  size = cpu.write_bytes(packets(kSecond));
  ring.aux(offset, size, 0);
  const auto* trace = t.backend.trace(kTid);
  // The block the loss cut ([B+0x0e, ...]) is a gap block; decoding
  // resumed at the second chunk's first PSB, where the thread was at B+0x15.
  auto expected = blocks({{0x00, 0x07}, {0x05, 0x07}, {0x05, 0x09}, {0x2d, 0x31}, {0x0e, 0x00}, {0x15, 0x15},
                          {0x33, 0x33}, {0x17, 0x1e}, {0x22, 0x27}, {0x2a, 0x2b}});
  expected[4].end = stub::tracing::kGapAddress;
  REQUIRE(trace->blocks(0, B + 0x2b) == expected);
}

TEST_CASE("intel-pt: a loss with nothing after it yet ends the trace in a gap") {
  Traced t;
  auto ring = t.seam.ring_writer(t.fd);
  auto cpu = t.seam.aux_writer(t.fd);
  ring.aux(0, cpu.write_bytes(packets(kFirst)), 0);
  ring.lost(3);
  const auto* trace = t.backend.trace(kTid);
  auto got = trace->blocks(0, B + 0x2b);
  REQUIRE(got.size() == kFirst.size() + 1);
  REQUIRE(got[kFirst.size() - 1] == Block{B + 0x0e, stub::tracing::kGapAddress});  // never joined to the pc
}

TEST_CASE("intel_pt reader: chunks become pieces, losses become lost pieces") {
  perf_event_mmap_page header{};
  uint8_t data[4096] = {};
  uint8_t aux[4096] = {};
  stub::tracing::AuxBuffers view{&header, data, sizeof data, aux, sizeof aux, {}};
  fakeperf::RingWriter ring{&header, data, sizeof data};
  fakeperf::AuxWriter cpu{aux, sizeof aux};
  stub::tracing::IntelPtReader reader;
  REQUIRE(reader.read(view).empty());
  std::vector<uint8_t> bytes(5000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  // More than the AUX area holds: the newest 4096 bytes, after a loss (and
  // wrapped around the AUX area's end).
  ring.aux(0, cpu.write_bytes(bytes), PERF_AUX_FLAG_TRUNCATED);
  auto pieces = reader.read(view);
  REQUIRE(pieces.size() == 3);
  REQUIRE(pieces[0].lost);
  REQUIRE(pieces[1].bytes == std::vector<uint8_t>(bytes.end() - 4096, bytes.end()));
  REQUIRE(pieces[2].lost);
  REQUIRE(reader.stats().truncated == 1);
  REQUIRE(header.aux_tail == 5000);
  ring.aux(5000, cpu.write_bytes({1, 2, 3}), PERF_AUX_FLAG_OVERWRITE);
  pieces = reader.read(view);
  REQUIRE(pieces.size() == 2);
  REQUIRE(pieces[0].lost);
  REQUIRE(pieces[1].bytes == std::vector<uint8_t>{1, 2, 3});
}

TEST_CASE("probe: intel_pt first; where it is missing, --backend=intel-pt refuses and says why") {
  FakePerfSeam seam;
  fakeperf::set_cpu(seam, "GenuineIntel");
  seam.cpuid_leaves[7] = {0, 1u << 25, 0, 0};  // Intel PT
  seam.files["/sys/bus/event_source/devices/intel_bts/type"] = "9\n";
  seam.files["/sys/bus/event_source/devices/intel_pt/type"] = "8\n";
  auto f = stub::tracing::probe_backends(seam);
  REQUIRE(f.cpu_has_pt);
  REQUIRE(f.intel_pt_type == 8u);
  REQUIRE(f.auto_choice == TraceBackendChoice::IntelPt);
  REQUIRE(*stub::tracing::resolve_backend(f, TraceBackendChoice::Auto) == TraceBackendChoice::IntelPt);
  REQUIRE(*stub::tracing::resolve_backend(f, TraceBackendChoice::IntelPt) == TraceBackendChoice::IntelPt);
  auto text = stub::tracing::format_probe(f);
  INFO(text);
  REQUIRE(text.find("Processor Trace: yes") != std::string::npos);
  REQUIRE(text.find("intel_pt PMU: yes, type 8\n") != std::string::npos);
  REQUIRE(text.find("intel-pt event for a thread: opens\n") != std::string::npos);
  REQUIRE(text.find("auto picks: intel-pt (the intel_pt PMU opens for a thread)") != std::string::npos);
  REQUIRE(seam.open_events() == 0);

  seam.open_errno_by_type[8] = EACCES;
  f = stub::tracing::probe_backends(seam);
  REQUIRE(f.auto_choice == TraceBackendChoice::IntelBts);
  REQUIRE(f.auto_reason == "intel_pt does not open (Permission denied), but the intel_bts PMU opens for a thread");
  REQUIRE(stub::tracing::resolve_backend(f, TraceBackendChoice::IntelPt).error().message ==
          "--backend=intel-pt: perf_event_open(intel_pt) failed: Permission denied "
          "(GenuineIntel family 6 model 85, perf_event_paranoid unknown)");

  FakePerfSeam amd;
  fakeperf::set_cpu(amd, "AuthenticAMD", 0x00b00f21, 0);
  amd.open_errno_by_type[PERF_TYPE_HARDWARE] = ENOENT;
  f = stub::tracing::probe_backends(amd);
  REQUIRE_FALSE(f.intel_pt_pmu);
  REQUIRE(f.auto_choice == TraceBackendChoice::Software);
  REQUIRE(f.auto_reason ==
          "no branch-trace hardware: no intel_pt PMU, no intel_bts PMU and perf_event_open(BTS) failed "
          "(No such file or directory)");
  text = stub::tracing::format_probe(f);
  REQUIRE(text.find("intel_pt PMU: no (/sys/bus/event_source/devices/intel_pt does not exist)\n") !=
          std::string::npos);
  REQUIRE(text.find("intel-pt event for a thread: fails: no such PMU\n") != std::string::npos);
  REQUIRE(stub::tracing::resolve_backend(f, TraceBackendChoice::IntelPt).error().message ==
          "--backend=intel-pt: no intel_pt PMU: /sys/bus/event_source/devices/intel_pt does not exist "
          "(no branch-trace hardware: this CPU is AuthenticAMD)");
  REQUIRE(stub::server::parse_command_line({"--backend=intel-pt", ":0", "prog"})->trace_backend ==
          TraceBackendChoice::IntelPt);
}

TEST_CASE("intel-pt: a thread's exit reads its last packets; unreadable code is a gap, never a guess") {
  Traced t;
  auto ring = t.seam.ring_writer(t.fd);
  auto cpu = t.seam.aux_writer(t.fd);
  ring.aux(0, cpu.write_bytes(packets(kWhole)), 0);
  t.backend.on_thread_exited(kTid);
  REQUIRE_FALSE(t.seam.events.at(t.fd).open);
  REQUIRE(t.seam.live_mappings.empty());
  REQUIRE(t.backend.trace(kTid)->blocks(0, B + 0x2b) == kWhole);

  // The same packets against code the decoder cannot read: no branch
  // invented, and the trace says it lost the history.
  Traced blind;
  blind.control.code.clear();
  auto ring2 = blind.seam.ring_writer(blind.fd);
  auto cpu2 = blind.seam.aux_writer(blind.fd);
  ring2.aux(0, cpu2.write_bytes(packets(kWhole)), 0);
  const auto* trace = blind.backend.trace(kTid);
  REQUIRE(trace->size() >= 1);
  for (uint64_t s = trace->first_sequence(); s < trace->end_sequence(); ++s) {
    REQUIRE(trace->at(s).from == stub::tracing::kGapAddress);
  }
}

namespace {

// The loop, func, func2, the indirect jmp, the syscall, je, sent back to
// the start from B+0x2b: `passes` times, as the CPU writes it with a PSB+
// every `period` bytes.
std::vector<Block> passes(int n) {
  std::vector<Block> out;
  for (int i = 0; i < n; ++i) {
    for (const Block& b : kWhole) out.push_back(b);
  }
  return out;
}

}  // namespace

TEST_CASE("intel-pt: a clean PSB-to-PSB segment is stored as the CPU wrote it; a segment with a gap as branches") {
  const std::vector<Block> run = passes(40);
  auto insns = decoder::InstructionDecoder::create().value();
  decoder::BufferReader code{B, kCode.data(), kCode.size()};
  decoder::BlockCache cache{insns, code};
  decoder::PtEncodeOptions opts;
  opts.psb_period = 256;
  auto stream = decoder::encode_pt(run, cache, opts);
  REQUIRE(stream.ok());
  const std::vector<uint8_t>& cpu_bytes = stream->bytes;
  const std::vector<std::size_t> psbs = psb_offsets(cpu_bytes);
  REQUIRE(psbs.size() >= 4);
  REQUIRE(psbs.front() == 0);

  SECTION("clean: every complete segment's bytes are a stored chunk, unchanged") {
    Traced t;
    auto ring = t.seam.ring_writer(t.fd);
    auto cpu = t.seam.aux_writer(t.fd);
    ring.aux(0, cpu.write_bytes(cpu_bytes), 0);
    const auto* trace = t.backend.trace(kTid);
    REQUIRE(trace->blocks(0, B + 0x2b) == run);  // the branches read back are the decoded ones
    const auto stored = trace->stored_segments(0);
    // Every segment but the last (open: no PSB after it) is stored whole.
    REQUIRE(stored.size() == psbs.size() - 1);
    for (std::size_t i = 0; i + 1 < psbs.size(); ++i) {
      const std::vector<uint8_t> expected(cpu_bytes.begin() + static_cast<long>(psbs[i]),
                                          cpu_bytes.begin() + static_cast<long>(psbs[i + 1]));
      REQUIRE(std::vector<uint8_t>(stored[i].packets.begin(), stored[i].packets.end()) == expected);
    }
    REQUIRE(stored[1].first_sequence == stored[0].first_sequence + stored[0].count);
    REQUIRE(trace->pt_chunks() == psbs.size() - 1);
  }

  SECTION("a segment whose bytes were partly lost is stored as branches, the rest as packets") {
    Traced t;
    auto ring = t.seam.ring_writer(t.fd);
    auto cpu = t.seam.aux_writer(t.fd);
    // The second segment loses 8 bytes in the middle (never announced).
    const std::size_t cut = psbs[1] + (psbs[2] - psbs[1]) / 2;
    std::vector<uint8_t> head(cpu_bytes.begin(), cpu_bytes.begin() + static_cast<long>(cut));
    std::vector<uint8_t> tail(cpu_bytes.begin() + static_cast<long>(cut) + 8, cpu_bytes.end());
    ring.aux(0, cpu.write_bytes(head), 0);
    cpu.head += 8;
    const uint64_t offset = cpu.head;
    ring.aux(offset, cpu.write_bytes(tail), 0);
    const auto* trace = t.backend.trace(kTid);
    const auto stored = trace->stored_segments(0);
    // The first segment whole; the cut one as branches and a gap; the
    // segments after the loss resync at their PSB, then whole again.
    REQUIRE(!stored.empty());
    REQUIRE(std::vector<uint8_t>(stored[0].packets.begin(), stored[0].packets.end()) ==
            std::vector<uint8_t>(cpu_bytes.begin(), cpu_bytes.begin() + static_cast<long>(psbs[1])));
    REQUIRE(trace->explicit_chunks() + (trace->size() > 0 ? 1 : 0) >= 1);
    bool gap = false;
    for (uint64_t seq = trace->first_sequence(); seq < trace->end_sequence(); ++seq) {
      gap = gap || trace->at(seq).from == stub::tracing::kGapAddress;
    }
    REQUIRE(gap);
    for (const auto& s : stored) {
      // No stored segment holds the gap.
      for (uint64_t seq = s.first_sequence; seq < s.first_sequence + s.count; ++seq) {
        REQUIRE(trace->at(seq).from != stub::tracing::kGapAddress);
      }
    }
  }
}

TEST_CASE("intel-pt: segments the thread stopped in the middle of are still stored as the CPU wrote them") {
  // A stop reads the AUX area wherever the CPU is: in the middle of a
  // segment, whose confirmed branches are handed out then (replay needs
  // them). With a PSB every 256 bytes a segment is shorter than a store
  // chunk; every 4 KiB (the hardware's default), longer.
  for (std::size_t period : {std::size_t{256}, std::size_t{4096}}) {
    CAPTURE(period);
    const std::vector<Block> run = passes(period == 256 ? 40 : 1500);
    auto insns = decoder::InstructionDecoder::create().value();
    decoder::BufferReader code{B, kCode.data(), kCode.size()};
    decoder::BlockCache cache{insns, code};
    decoder::PtEncodeOptions opts;
    opts.psb_period = period;
    auto stream = decoder::encode_pt(run, cache, opts);
    REQUIRE(stream.ok());
    const std::vector<uint8_t>& cpu_bytes = stream->bytes;
    const std::vector<std::size_t> psbs = psb_offsets(cpu_bytes);
    REQUIRE(psbs.size() >= 4);
    // Cut in the middle of every segment, and 3 bytes into some of them
    // (inside their PSB+).
    std::vector<std::size_t> cuts;
    for (std::size_t i = 0; i < psbs.size(); ++i) {
      const std::size_t end = i + 1 < psbs.size() ? psbs[i + 1] : cpu_bytes.size();
      if (i % 3 == 1) cuts.push_back(psbs[i] + 3);
      cuts.push_back(psbs[i] + (end - psbs[i]) / 2);
    }
    cuts.push_back(cpu_bytes.size());

    Traced t(256 * kPage);  // room for the whole run
    auto ring = t.seam.ring_writer(t.fd);
    auto cpu = t.seam.aux_writer(t.fd);
    std::size_t done = 0;
    uint64_t handed_out = 0;
    for (std::size_t cut : cuts) {
      const std::vector<uint8_t> piece(cpu_bytes.begin() + static_cast<long>(done),
                                       cpu_bytes.begin() + static_cast<long>(cut));
      const uint64_t offset = cpu.head;
      ring.aux(offset, cpu.write_bytes(piece), 0);
      done = cut;
      const auto* trace = t.backend.trace(kTid);  // a stop
      REQUIRE(trace->first_sequence() == 0);
      // Sequence numbers once handed out stay: the blocks so far are the run's.
      REQUIRE(trace->end_sequence() >= handed_out);
      handed_out = trace->end_sequence();
      const std::vector<Block> now = trace->blocks(0, 0);
      for (std::size_t i = 0; i + 1 < now.size(); ++i) REQUIRE(now[i] == run[i]);
    }
    const auto* trace = t.backend.trace(kTid);
    REQUIRE(trace->blocks(0, B + 0x2b) == run);
    const auto stored = trace->stored_segments(0);
    REQUIRE(stored.size() == psbs.size() - 1);
    for (std::size_t i = 0; i + 1 < psbs.size(); ++i) {
      INFO("segment " << i);
      const std::vector<uint8_t> expected(cpu_bytes.begin() + static_cast<long>(psbs[i]),
                                          cpu_bytes.begin() + static_cast<long>(psbs[i + 1]));
      REQUIRE(std::vector<uint8_t>(stored[i].packets.begin(), stored[i].packets.end()) == expected);
      if (i > 0) REQUIRE(stored[i].first_sequence == stored[i - 1].first_sequence + stored[i - 1].count);
    }
  }
}

}  // namespace test_intel_pt_backend
