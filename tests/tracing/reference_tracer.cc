#include "tests/tracing/reference_tracer.h"

#include <csignal>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>

#include "decoder/instruction_history.h"
#include "protocol/amd64_registers.h"
#include "stub/ptrace_process.h"

namespace tracing {

using btstub::Expected;

namespace {

using btstub::ErrorCode;
using btstub::Expected;
using btstub::make_error;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Expected<uint64_t> pc_of(stub::Process& process, pid_t tid) {
  auto regs = process.read_registers(tid);
  if (!regs) return regs.error();
  return regs->get_u64(protocol::Amd64Reg::rip);
}

// Keeps a copy of every page the tracer reads, taken the first time it is
// read: the blocks are expanded after the program exited, from the code the
// tracer itself saw.
class SnapshotControl final : public stub::TracedThreadControl {
 public:
  static constexpr uint64_t kPage = 4096;
  explicit SnapshotControl(stub::TracedThreadControl& real) : real_(&real) {}
  void bind(stub::TracedThreadControl& real) { real_ = &real; }

  Expected<protocol::RegisterFile> read_registers(pid_t tid) override { return real_->read_registers(tid); }
  Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) override {
    for (uint64_t page = addr & ~(kPage - 1); page < addr + len; page += kPage) {
      if (pages_.count(page) != 0) continue;
      auto bytes = real_->read_memory(page, kPage);
      if (bytes) pages_[page] = std::move(*bytes);
    }
    return real_->read_memory(addr, len);
  }
  bool has_user_breakpoint(uint64_t addr) const override { return real_->has_user_breakpoint(addr); }
  Expected<void> set_trace_stop(pid_t tid, std::optional<uint64_t> addr) override {
    return real_->set_trace_stop(tid, addr);
  }
  const std::map<uint64_t, std::vector<uint8_t>>& pages() const { return pages_; }

 private:
  stub::TracedThreadControl* real_;
  std::map<uint64_t, std::vector<uint8_t>> pages_;
};

class SnapshotReader final : public decoder::CodeReader {
 public:
  explicit SnapshotReader(const std::map<uint64_t, std::vector<uint8_t>>& pages) : pages_(pages) {}
  std::size_t read(uint64_t addr, uint8_t* out, std::size_t len) override {
    std::size_t done = 0;
    while (done < len) {
      const uint64_t a = addr + done;
      auto it = pages_.find(a & ~(SnapshotControl::kPage - 1));
      if (it == pages_.end()) break;
      const std::size_t offset = a - it->first;
      if (offset >= it->second.size()) break;
      const std::size_t n = std::min(len - done, it->second.size() - offset);
      std::memcpy(out + done, it->second.data() + offset, n);
      done += n;
    }
    return done;
  }

 private:
  const std::map<uint64_t, std::vector<uint8_t>>& pages_;
};

// The tracer, seen through the snapshotting control.
class SnapshotHook final : public stub::TraceHook {
 public:
  SnapshotHook(stub::SoftwareTracer& tracer, SnapshotControl& snapshot) : tracer_(tracer), snapshot_(snapshot) {}
  bool traces(pid_t tid) const override { return tracer_.traces(tid); }
  stub::StepKind before_resume(stub::TracedThreadControl& control, pid_t tid, stub::StepKind requested,
                               int signal) override {
    snapshot_.bind(control);
    return tracer_.before_resume(snapshot_, tid, requested, signal);
  }
  stub::TraceVerdict on_stop(stub::TracedThreadControl& control, const stub::TracedStop& stop) override {
    snapshot_.bind(control);
    return tracer_.on_stop(snapshot_, stop);
  }
  void on_thread_created(pid_t tid, pid_t parent) override { tracer_.on_thread_created(tid, parent); }
  void on_thread_exited(pid_t tid) override { tracer_.on_thread_exited(tid); }
  void on_exec(pid_t tid) override { tracer_.on_exec(tid); }

 private:
  stub::SoftwareTracer& tracer_;
  SnapshotControl& snapshot_;
};

// The [vdso] mapping from /proc/PID/maps (0, 0 when there is none).
std::pair<uint64_t, uint64_t> vdso_range(pid_t pid) {
  std::FILE* maps = std::fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "r");
  if (maps == nullptr) return {0, 0};
  char line[512];
  std::pair<uint64_t, uint64_t> range{0, 0};
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long long begin = 0, end = 0;
    if (std::strstr(line, "[vdso]") != nullptr && std::sscanf(line, "%llx-%llx", &begin, &end) == 2) {
      range = {begin, end};
    }
  }
  std::fclose(maps);
  return range;
}

bool is_rep_string(stub::Process& process, decoder::InstructionDecoder& decoder, uint64_t pc) {
  auto bytes = process.read_memory(pc, decoder::kMaxInstructionSize);
  if (!bytes) return false;
  auto insn = decoder::decode_with_fallback(decoder, pc, bytes->data(), bytes->size());
  return insn && insn->text.rfind("rep", 0) == 0;
}

// A signal stop that is not a trap is handed back with the next resume, as a
// client passing every signal would.
int signal_to_deliver(const stub::ProcessEvent& event) { return event.signal == SIGTRAP ? 0 : event.signal; }

}  // namespace

Expected<RunResult> run_reference(const stub::LaunchOptions& launch, uint64_t max_stops) {
  auto process = stub::PtraceProcess::launch(launch);
  if (!process) return process.error();
  stub::Process& p = **process;
  const pid_t tid = p.pid();
  auto made = decoder::InstructionDecoder::create();
  if (!made) return made.error();
  decoder::InstructionDecoder& decoder = *made;
  RunResult result;
  const auto start = Clock::now();
  auto first = pc_of(p, tid);
  if (!first) return first.error();
  std::tie(result.vdso_begin, result.vdso_end) = vdso_range(tid);
  result.pcs.push_back(*first);
  int signal = 0;
  while (result.stops < max_stops) {
    if (auto r = p.resume(tid, stub::StepKind::SingleStep, signal); !r) return r.error();
    auto event = p.wait_event();
    if (!event) return event.error();
    ++result.stops;
    if (event->kind == stub::ProcessEvent::Kind::Exited) {
      result.exit_code = event->exit_code;
      result.seconds = since(start);
      return result;
    }
    if (event->kind == stub::ProcessEvent::Kind::Killed) break;
    auto pc = pc_of(p, event->tid);
    if (!pc) return pc.error();
    // The same position seen twice is one instruction: a signal stop right
    // after a step (nothing ran in between), or a rep-string instruction,
    // which single-steps once per iteration. Only a branch to itself really
    // runs again in place.
    if (*pc != result.pcs.back() || (event->single_stepped && !is_rep_string(p, decoder, *pc))) {
      result.pcs.push_back(*pc);
    }
    signal = signal_to_deliver(*event);
  }
  return make_error(ErrorCode::Internal, "reference run did not reach the exit");
}

Expected<RunResult> run_software(const stub::LaunchOptions& launch, uint64_t last_pc) {
  // Debug registers that never trap (some hypervisors) leave only stepping.
  const auto stops = stub::PtraceProcess::debug_registers_work() ? stub::TraceStops::DebugRegister
                                                                 : stub::TraceStops::SingleStep;
  auto tracer = stub::SoftwareTracer::create(stub::TraceConfig{uint64_t{1} << 26, decoder::OverflowPolicy::Stop},
                                             /*enable_all=*/true, stops);
  if (!tracer) return tracer.error();
  auto process = stub::PtraceProcess::launch(launch);
  if (!process) return process.error();
  stub::PtraceProcess& p = **process;
  SnapshotControl snapshot(p);
  SnapshotHook hook(**tracer, snapshot);
  p.set_trace_hook(&hook);
  const pid_t tid = p.pid();
  RunResult result;
  const auto start = Clock::now();
  int signal = 0;
  for (;;) {
    if (auto r = p.resume(tid, stub::StepKind::Continue, signal); !r) return r.error();
    auto event = p.wait_event();
    if (!event) return event.error();
    ++result.stops;
    if (event->kind == stub::ProcessEvent::Kind::Exited) {
      result.exit_code = event->exit_code;
      break;
    }
    if (event->kind == stub::ProcessEvent::Kind::Killed) return make_error(ErrorCode::Internal, "program killed");
    signal = signal_to_deliver(*event);
  }
  result.seconds = since(start);
  p.set_trace_hook(nullptr);
  result.tracer_stats = (*tracer)->stats();
  result.stepping_only = stops == stub::TraceStops::SingleStep;
  const decoder::BlockTrace* trace = (*tracer)->trace(tid);
  if (trace == nullptr) return make_error(ErrorCode::Internal, "no trace for the main thread");
  if (trace->lost_since(0) || trace->full()) return make_error(ErrorCode::Internal, "trace buffer full");
  result.trace_branches = trace->size();
  // TRACE_FIDELITY_DEBUG=1: the tracer's counters and newest branches, for a
  // failure whose blocks do not decode.
  if (std::getenv("TRACE_FIDELITY_DEBUG") != nullptr) {
    const auto& st = result.tracer_stats;
    std::fprintf(stderr, "stops %llu absorbed %llu trace stops %llu steps %llu branches %llu, %llu reported\n",
                 (unsigned long long)st.stops, (unsigned long long)st.absorbed, (unsigned long long)st.trace_stops,
                 (unsigned long long)st.steps, (unsigned long long)st.branches, (unsigned long long)result.stops);
    const uint64_t from = trace->end_sequence() > 20 ? trace->end_sequence() - 20 : trace->first_sequence();
    for (uint64_t s = from; s < trace->end_sequence(); ++s) {
      std::fprintf(stderr, "branch %llu: %llx -> %llx\n", static_cast<unsigned long long>(s),
                   static_cast<unsigned long long>(trace->at(s).from), static_cast<unsigned long long>(trace->at(s).to));
    }
  }
  auto decoder = decoder::InstructionDecoder::create();
  if (!decoder) return decoder.error();
  SnapshotReader code(snapshot.pages());
  auto pcs = decoder::instruction_history(*decoder, code, trace->blocks(trace->first_sequence(), last_pc));
  if (!pcs) return pcs.error();
  result.pcs = std::move(*pcs);
  result.code_pages = snapshot.pages();
  return result;
}

Projection project_block_mode(const std::vector<uint64_t>& pcs,
                              const std::map<uint64_t, std::vector<uint8_t>>& code_pages) {
  Projection out;
  auto made = decoder::InstructionDecoder::create();
  if (!made) return out;
  stub::BlockCache blocks(std::move(made).value());
  SnapshotReader code(code_pages);
  for (std::size_t i = 0; i + 1 < pcs.size(); ++i) {
    auto insn = blocks.instruction_at(pcs[i], code);
    if (!insn || !insn->is_control_transfer()) continue;
    ++out.stops;
    if (insn->kind == decoder::ControlKind::Syscall) ++out.stops;
    const bool taken = pcs[i + 1] != insn->next_address();
    if (!taken || insn->kind == decoder::ControlKind::Syscall) continue;
    ++out.branches;
    if (blocks.block_end(pcs[i + 1], code).address == pcs[i]) ++out.stops;
  }
  return out;
}

}  // namespace tracing
