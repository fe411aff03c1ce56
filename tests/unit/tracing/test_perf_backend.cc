// The hardware backends end to end over a fake seam: enable a thread, the
// fake kernel writes its records into the mapped buffers, trace() returns
// the blocks. Also buffer sizing, limits, thread life-cycle, the probe.
#include <catch2/catch.hpp>

#include "fake_perf_seam.h"
#include "stub/tracing/backend_probe.h"
#include "stub/server/options.h"
#include "stub/tracing/perf_backend.h"

namespace test_perf_backend {  // this file's own names, apart in a unity build

using decoder::Block;
using fakeperf::FakePerfSeam;
using fakeperf::known_branches;
using fakeperf::kPage;
using stub::tracing::HardwareTrace;
using stub::tracing::PerfBackend;

namespace {

PerfBackend::Options options(HardwareTrace kind, uint64_t bytes = 64 * 1024, bool all = false) {
  PerfBackend::Options o;
  o.kind = kind;
  o.intel_bts_type = 9;
  o.config.buffer_bytes = bytes;
  o.enable_all = all;
  return o;
}

// Blocks for `count` known branches from `first`, tracing from `origin`.
std::vector<Block> known_blocks(uint64_t origin, uint64_t first, uint64_t count, uint64_t pc) {
  std::vector<Block> out;
  uint64_t begin = origin;
  for (const auto& b : known_branches(first, count)) {
    out.push_back({begin, b.from});
    begin = b.to;
  }
  out.push_back({begin, pc});
  return out;
}

const pid_t kTid = 4242;
const uint64_t kOrigin = 0x401000;

}  // namespace

TEST_CASE("perf-bts end to end: the event, its ring, and blocks from the fake kernel's samples") {
  FakePerfSeam seam;
  fakeperf::PcControl control;
  control.pc[kTid] = kOrigin;
  PerfBackend backend(seam, options(HardwareTrace::PerfBts, 10000));
  backend.set_control(&control);
  REQUIRE(backend.name() == "perf-bts");
  REQUIRE(backend.enable(kTid));
  REQUIRE(backend.enabled(kTid));
  REQUIRE(backend.traces(kTid));

  int fd = backend.event_fd(kTid);
  const auto& event = seam.events.at(fd);
  REQUIRE(event.tid == kTid);
  REQUIRE(event.attr.type == PERF_TYPE_HARDWARE);
  REQUIRE(event.attr.config == PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  REQUIRE(event.attr.sample_period == 1);
  REQUIRE(event.attr.sample_type == (PERF_SAMPLE_IP | PERF_SAMPLE_ADDR));
  REQUIRE(event.attr.exclude_kernel == 1);
  REQUIRE_FALSE(event.ring_writable);  // overwrite mode: the kernel never waits
  // 10000 bytes round up to 4 pages (a power of two), plus the header page.
  REQUIRE(event.ring->length == 5 * kPage);
  REQUIRE(backend.thread_config(kTid)->buffer_bytes == 4 * kPage);

  const decoder::BlockTrace* trace = backend.trace(kTid);
  REQUIRE(trace != nullptr);
  REQUIRE(trace->size() == 0);
  auto kernel = seam.ring_writer(fd);
  kernel.samples(known_branches(0, 5));
  trace = backend.trace(kTid);
  REQUIRE(trace->blocks(trace->first_sequence(), 0x401052) == known_blocks(kOrigin, 0, 5, 0x401052));
  // A delta: the store keeps what it had and adds the new branches.
  kernel.samples(known_branches(5, 3));
  trace = backend.trace(kTid);
  REQUIRE(trace->end_sequence() == 8);
  REQUIRE(trace->blocks(0, 0x401081) == known_blocks(kOrigin, 0, 8, 0x401081));
  REQUIRE(backend.trace(kTid)->end_sequence() == 8);  // nothing new: nothing added
}

TEST_CASE("perf-bts: a ring overwritten before it was read leaves a gap, not a joined block") {
  FakePerfSeam seam;
  fakeperf::PcControl control;
  control.pc[kTid] = kOrigin;
  PerfBackend backend(seam, options(HardwareTrace::PerfBts, 4096));
  backend.set_control(&control);
  REQUIRE(backend.enable(kTid));
  auto kernel = seam.ring_writer(backend.event_fd(kTid));
  REQUIRE(backend.trace(kTid)->size() == 0);
  kernel.samples(known_branches(0, 200));  // 4800 bytes through a 4096-byte ring
  const auto* trace = backend.trace(kTid);
  // The ring frames 4080/24 = 170 samples back from its head: branches
  // 30..199, after a gap. The store (170 records too) keeps the branches;
  // the gap record (0, b30.from) fell out, leaving the oldest block at
  // b30's own instruction: never joined to the origin.
  REQUIRE(fakeperf::branches(*trace) == known_branches(30, 170));
  auto b30 = fakeperf::known_branch(30);
  REQUIRE(trace->blocks(trace->first_sequence(), 0)[0] == Block{b30.from, b30.from});
}

TEST_CASE("perf-bts: locked-memory limits shrink the buffer; none at all is a clear error") {
  FakePerfSeam seam;
  seam.files["/proc/sys/kernel/perf_event_mlock_kb"] = "516\n";
  seam.memlock = 64 * 1024;
  // The "kernel" refuses anything over 32 pages + header.
  seam.map_errno = [](std::size_t length, std::size_t) { return length > 33 * kPage ? EPERM : 0; };
  PerfBackend backend(seam, options(HardwareTrace::PerfBts, 4 << 20));
  REQUIRE(backend.enable(kTid));
  REQUIRE(backend.thread_config(kTid)->buffer_bytes == 32 * kPage);
  REQUIRE(seam.map_lengths.front() == 1025 * kPage);  // asked for what was configured first

  FakePerfSeam none;
  none.map_errno = [](std::size_t, std::size_t) { return ENOMEM; };
  PerfBackend starved(none, options(HardwareTrace::PerfBts));
  auto enabled = starved.enable(kTid);
  REQUIRE_FALSE(enabled);
  INFO(enabled.error().message);
  REQUIRE(enabled.error().message.find("perf-bts: thread 4242: cannot map the sample ring") != std::string::npos);
  REQUIRE(enabled.error().message.find("RLIMIT_MEMLOCK") != std::string::npos);
  REQUIRE(enabled.error().message.find("runs untraced") != std::string::npos);
  REQUIRE_FALSE(starved.enabled(kTid));
  REQUIRE_FALSE(starved.traces(kTid));
  REQUIRE(none.open_events() == 0);  // nothing leaked
  REQUIRE(none.map_lengths.back() == 2 * kPage);  // it tried down to one page
  // An unrelated failure is not retried smaller.
  FakePerfSeam odd;
  odd.map_errno = [](std::size_t, std::size_t) { return EINVAL; };
  PerfBackend once(odd, options(HardwareTrace::PerfBts));
  REQUIRE_FALSE(once.enable(kTid));
  REQUIRE(odd.map_lengths.size() == 1);
}

TEST_CASE("perf-bts: perf_event_open failing is a clear error and the thread stays untraced") {
  FakePerfSeam seam;
  seam.open_errno_by_type[PERF_TYPE_HARDWARE] = ENOENT;
  PerfBackend backend(seam, options(HardwareTrace::PerfBts));
  auto enabled = backend.enable(kTid);
  REQUIRE_FALSE(enabled);
  REQUIRE(enabled.error().message == "perf-bts: thread 4242: perf_event_open failed: No such file or directory");
  REQUIRE(backend.trace(kTid) == nullptr);
  REQUIRE_FALSE(backend.disable(kTid));
}

TEST_CASE("perf-bts: enable twice, disable, threads created later, exit keeps the trace") {
  FakePerfSeam seam;
  fakeperf::PcControl control;
  control.pc[kTid] = kOrigin;
  control.pc[kTid + 1] = 0x402000;
  PerfBackend backend(seam, options(HardwareTrace::PerfBts, 4096, /*all=*/true));
  backend.set_control(&control);
  backend.adopt_threads({kTid});
  REQUIRE(backend.enabled(kTid));
  REQUIRE(backend.enable(kTid).error().message == "Btrace already enabled.");
  // A new thread gets its own event; its origin is read at its first resume.
  REQUIRE(backend.traces(kTid + 1));
  backend.on_thread_created(kTid + 1, kTid);
  int fd2 = backend.event_fd(kTid + 1);
  REQUIRE(fd2 != backend.event_fd(kTid));
  REQUIRE(seam.events.at(fd2).tid == kTid + 1);
  REQUIRE(backend.before_resume(control, kTid + 1, stub::process::StepKind::Continue, 0) ==
          stub::process::StepKind::Continue);
  seam.ring_writer(fd2).samples(known_branches(0, 2, 0x402000));
  stub::process::TracedStop stop;
  stop.tid = kTid + 1;
  REQUIRE(backend.on_stop(control, stop) == stub::process::TraceVerdict::Report);
  // The exit reads the last branches before the buffer goes.
  backend.on_thread_exited(kTid + 1);
  REQUIRE_FALSE(seam.events.at(fd2).open);
  const auto* trace = backend.trace(kTid + 1);
  REQUIRE(trace != nullptr);
  REQUIRE(trace->blocks(0, 0x402024)[0] == Block{0x402000, 0x40200b});
  REQUIRE(fakeperf::branches(*trace) == known_branches(0, 2, 0x402000));
  // A thread the backend never heard of, under enable_all, is opened at its first resume.
  control.pc[kTid + 2] = 0x403000;
  REQUIRE(backend.before_resume(control, kTid + 2, stub::process::StepKind::SingleStep, 0) ==
          stub::process::StepKind::SingleStep);
  REQUIRE(backend.event_fd(kTid + 2) >= 0);
  REQUIRE(backend.trace(kTid + 2)->oldest_begin() == 0x403000);

  backend.disable_all();
  REQUIRE(seam.open_events() == 0);
  REQUIRE(seam.live_mappings.empty());
  REQUIRE_FALSE(backend.all_enabled());
}

TEST_CASE("intel-bts end to end: PMU event, AUX area, blocks and a truncated chunk's gap") {
  FakePerfSeam seam;
  fakeperf::PcControl control;
  control.pc[kTid] = kOrigin;
  PerfBackend backend(seam, options(HardwareTrace::IntelBts, 3 * kPage));
  backend.set_control(&control);
  REQUIRE(backend.name() == "intel-bts");
  REQUIRE(backend.enable(kTid));
  int fd = backend.event_fd(kTid);
  const auto& event = seam.events.at(fd);
  REQUIRE(event.attr.type == 9);  // the PMU's type from sysfs
  REQUIRE(event.attr.exclude_kernel == 1);
  REQUIRE(event.ring_writable);   // we own the tails
  REQUIRE(event.aux != nullptr);
  REQUIRE(event.aux->length == 4 * kPage);  // 3 pages round up to 4
  REQUIRE(backend.thread_config(kTid)->buffer_bytes == 4 * kPage);

  auto ring = seam.ring_writer(fd);
  auto cpu = seam.aux_writer(fd);
  uint64_t size = cpu.write(known_branches(0, 4));
  ring.aux(0, size, 0);
  const auto* trace = backend.trace(kTid);
  REQUIRE(trace->blocks(0, 0x401041) == known_blocks(kOrigin, 0, 4, 0x401041));
  REQUIRE(ring.header->aux_tail == size);

  uint64_t offset = cpu.head;
  size = cpu.write(known_branches(4, 1));
  ring.aux(offset, size, PERF_AUX_FLAG_TRUNCATED);
  offset = cpu.head = cpu.head + 240;  // lost while the driver waited for room
  size = cpu.write(known_branches(20, 1));
  ring.aux(offset, size, 0);
  trace = backend.trace(kTid);
  auto blocks = trace->blocks(0, 0x401152);
  // ... [0x401040, 0x40104b] (branch 4), gap, [0x40114b, 0x40114b] (branch 20), live.
  REQUIRE(blocks.size() == 8);
  REQUIRE(blocks[4] == Block{0x401040, 0x40104b});
  REQUIRE(blocks[5] == Block{0x401050, stub::tracing::kGapAddress});
  REQUIRE(blocks[6] == Block{0x40114b, 0x40114b});
  REQUIRE(blocks[7] == Block{0x401150, 0x401152});
}

TEST_CASE("intel-bts: the AUX mapping halves with aux_size kept equal to its length") {
  FakePerfSeam seam;
  seam.map_errno = [](std::size_t length, std::size_t offset) { return offset != 0 && length > 2 * kPage ? EPERM : 0; };
  PerfBackend backend(seam, options(HardwareTrace::IntelBts, 16 * kPage));
  REQUIRE(backend.enable(kTid));  // the fake refuses a mapping whose length differs from aux_size
  REQUIRE(backend.thread_config(kTid)->buffer_bytes == 2 * kPage);
}

TEST_CASE("plan_buffer_pages rounds to a power of two within the locked-memory allowance") {
  using stub::tracing::plan_buffer_pages;
  REQUIRE(plan_buffer_pages(1, kPage, std::nullopt, std::nullopt) == 1);
  REQUIRE(plan_buffer_pages(kPage, kPage, std::nullopt, std::nullopt) == 1);
  REQUIRE(plan_buffer_pages(kPage + 1, kPage, std::nullopt, std::nullopt) == 2);
  REQUIRE(plan_buffer_pages(64 * 1024, kPage, std::nullopt, std::nullopt) == 16);
  REQUIRE(plan_buffer_pages(100 * 1024, kPage, std::nullopt, std::nullopt) == 32);
  // 516 kB + 64 kB = 145 pages, less the header: 128.
  REQUIRE(plan_buffer_pages(uint64_t{1} << 30, kPage, 516, 64 * 1024) == 128);
  REQUIRE(plan_buffer_pages(64 * 1024, kPage, 516, 64 * 1024) == 16);
  REQUIRE(plan_buffer_pages(64 * 1024, kPage, 0, 0) == 1);
}

TEST_CASE("probe: an AMD machine without tracing hardware picks software and says why") {
  FakePerfSeam seam;
  fakeperf::set_cpu(seam, "AuthenticAMD", 0x00b00f21, 0);
  seam.open_errno_by_type[PERF_TYPE_HARDWARE] = ENOENT;
  seam.files["/proc/sys/kernel/perf_event_paranoid"] = "2\n";
  seam.files["/proc/sys/kernel/perf_event_mlock_kb"] = "516\n";
  auto f = stub::tracing::probe_backends(seam);
  REQUIRE(f.vendor == "AuthenticAMD");
  REQUIRE(f.family == 0x1a);
  REQUIRE(f.model == 0x02);
  REQUIRE_FALSE(f.intel_bts_pmu);
  REQUIRE(f.paranoid == 2);
  REQUIRE(f.mlock_kb == 516u);
  REQUIRE(f.auto_choice == stub::tracing::TraceBackendChoice::Software);
  auto text = stub::tracing::format_probe(f);
  INFO(text);
  REQUIRE(text.find("auto picks: software (no branch-trace hardware") != std::string::npos);
  REQUIRE(text.find("perf-bts event for a thread: fails: No such file or directory") != std::string::npos);
  REQUIRE(seam.open_events() == 0);

  REQUIRE(*stub::tracing::resolve_backend(f, stub::tracing::TraceBackendChoice::Auto) ==
          stub::tracing::TraceBackendChoice::Software);
  auto perf = stub::tracing::resolve_backend(f, stub::tracing::TraceBackendChoice::PerfBts);
  REQUIRE(perf.error().message ==
          "--backend=perf-bts: perf_event_open(BTS) failed: No such file or directory "
          "(no branch-trace hardware: this CPU is AuthenticAMD)");
  auto intel = stub::tracing::resolve_backend(f, stub::tracing::TraceBackendChoice::IntelBts);
  REQUIRE(intel.error().message.find("--backend=intel-bts: no intel_bts PMU") == 0);
}

TEST_CASE("probe: intel_bts first, then perf-bts") {
  FakePerfSeam seam;
  fakeperf::set_cpu(seam, "GenuineIntel");
  seam.files["/sys/bus/event_source/devices/intel_bts/type"] = "9\n";
  auto f = stub::tracing::probe_backends(seam);
  REQUIRE(f.family == 6);
  REQUIRE(f.model == 0x55);
  REQUIRE(f.cpu_has_ds);
  REQUIRE(f.intel_bts_type == 9u);
  REQUIRE(f.auto_choice == stub::tracing::TraceBackendChoice::IntelBts);
  REQUIRE(*stub::tracing::resolve_backend(f, stub::tracing::TraceBackendChoice::PerfBts) ==
          stub::tracing::TraceBackendChoice::PerfBts);

  seam.open_errno_by_type[9] = EACCES;  // e.g. perf_event_paranoid
  f = stub::tracing::probe_backends(seam);
  REQUIRE(f.auto_choice == stub::tracing::TraceBackendChoice::PerfBts);
  REQUIRE(f.auto_reason.find("no intel_pt PMU, intel_bts does not open (Permission denied)") == 0);
  REQUIRE(stub::tracing::resolve_backend(f, stub::tracing::TraceBackendChoice::IntelBts)
              .error()
              .message.find("Permission denied") != std::string::npos);
}

TEST_CASE("--backend accepts the hardware backends, --probe is a mode") {
  REQUIRE(stub::server::parse_command_line({"--backend=perf-bts", ":0", "prog"})->trace_backend ==
          stub::tracing::TraceBackendChoice::PerfBts);
  REQUIRE(stub::server::parse_command_line({"--backend=intel-bts", ":0", "prog"})->trace_backend ==
          stub::tracing::TraceBackendChoice::IntelBts);
  REQUIRE(stub::server::parse_command_line({"--probe"})->mode == stub::server::CommandLine::Mode::Probe);
  REQUIRE(stub::server::parse_command_line({"--backend=bts", ":0", "prog"}).error().message ==
          "Bad --backend 'bts': expected auto, software, perf-bts, intel-bts or intel-pt");
}

TEST_CASE("perf-bts: a thread created under enable_all whose event cannot open is named in problem()") {
  FakePerfSeam seam;
  fakeperf::PcControl control;
  control.pc[kTid] = kOrigin;
  PerfBackend backend(seam, options(HardwareTrace::PerfBts, 4096, /*all=*/true));
  backend.set_control(&control);
  REQUIRE(backend.problem().empty());
  seam.open_errno_by_type[PERF_TYPE_HARDWARE] = EMFILE;
  REQUIRE(backend.before_resume(control, kTid, stub::process::StepKind::Continue, 0) ==
          stub::process::StepKind::Continue);
  REQUIRE_FALSE(backend.enabled(kTid));
  REQUIRE(backend.problem() == "perf-bts: thread 4242: perf_event_open failed: Too many open files");
}

}  // namespace test_perf_backend
