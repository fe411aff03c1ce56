#include "tests/tracing/reference_tracer.h"

#include <csignal>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <tuple>
#include <elf.h>
#include <unistd.h>
#include <utility>

#include "decoder/instruction_history.h"
#include "protocol/amd64_registers.h"
#include "stub/process/ptrace_process.h"
#include "stub/tracing/translating_tracer.h"

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

// pc, rsp and rbp in one read.
struct Position {
  uint64_t pc = 0;
  decoder::StackSnapshot stack;
};
Expected<Position> position_of(stub::process::Process& process, pid_t tid) {
  auto regs = process.read_registers(tid);
  if (!regs) return regs.error();
  return Position{regs->get_u64(protocol::Amd64Reg::rip),
                  decoder::StackSnapshot{regs->get_u64(protocol::Amd64Reg::rsp), regs->get_u64(protocol::Amd64Reg::rbp)}};
}

// Keeps a copy of every page the tracer reads, taken the first time it is
// read: the blocks are expanded after the program exited, from the code the
// tracer itself saw.
class SnapshotControl final : public stub::process::TracedThreadControl {
 public:
  static constexpr uint64_t kPage = 4096;
  explicit SnapshotControl(stub::process::TracedThreadControl& real) : real_(&real) {}
  void bind(stub::process::TracedThreadControl& real) { real_ = &real; }

  Expected<protocol::RegisterFile> read_registers(pid_t tid) override { return real_->read_registers(tid); }
  Expected<protocol::RegisterFile> read_general_registers(pid_t tid) override {
    return real_->read_general_registers(tid);
  }
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
  Expected<void> set_trace_breakpoint(pid_t tid, std::optional<uint64_t> addr) override {
    return real_->set_trace_breakpoint(tid, addr);
  }
  Expected<void> set_trace_breakpoints(pid_t tid, const std::vector<uint64_t>& addrs) override {
    return real_->set_trace_breakpoints(tid, addrs);
  }
  Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& regs) override {
    return real_->write_registers(tid, regs);
  }
  Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override {
    return real_->write_memory(addr, bytes);
  }
  // The translating tracer's (its cache and logs).
  Expected<uint64_t> map_program_memory(pid_t tid, uint64_t near, uint64_t reach, uint64_t size,
                                        bool executable) override {
    return real_->map_program_memory(tid, near, reach, size, executable);
  }
  Expected<void> write_tracer_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override {
    return real_->write_tracer_memory(addr, bytes);
  }
  std::vector<uint64_t> user_breakpoints() const override { return real_->user_breakpoints(); }
  bool hw_points_in_use() const override { return real_->hw_points_in_use(); }
  void resend_signal(pid_t tid, int signal) override { real_->resend_signal(tid, signal); }
  bool stopping_all() const override { return real_->stopping_all(); }
  bool non_stop() const override { return real_->non_stop(); }
  Expected<int> step_now(pid_t tid) override { return real_->step_now(tid); }
  const std::map<uint64_t, std::vector<uint8_t>>& pages() const { return pages_; }

 private:
  stub::process::TracedThreadControl* real_;
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
class SnapshotHook final : public stub::process::TraceHook {
 public:
  // `tracer`: the software tracer, or the translating tracer over it.
  SnapshotHook(stub::process::TraceHook& tracer, stub::tracing::TraceBackend& backend, SnapshotControl& snapshot)
      : tracer_(tracer), backend_(backend), snapshot_(snapshot) {}
  bool traces(pid_t tid) const override { return tracer_.traces(tid); }
  stub::process::StepKind before_resume(stub::process::TracedThreadControl& control, pid_t tid,
                                        stub::process::StepKind requested, int signal) override {
    snapshot_.bind(control);
    return tracer_.before_resume(snapshot_, tid, requested, signal);
  }
  stub::process::TraceVerdict on_stop(stub::process::TracedThreadControl& control,
                                      const stub::process::TracedStop& stop) override {
    snapshot_.bind(control);
    return tracer_.on_stop(snapshot_, stop);
  }
  void on_held(stub::process::TracedThreadControl& control, pid_t tid) override {
    snapshot_.bind(control);
    tracer_.on_held(snapshot_, tid);
  }
  void on_thread_created(pid_t tid, pid_t parent) override {
    created.push_back(tid);
    tracer_.on_thread_created(tid, parent);
    if (trace_first_created && created.size() == 1) (void)backend_.enable(tid);
  }
  std::vector<pid_t> created;        // every thread the program created, in order
  bool trace_first_created = false;  // enable tracing for the first one only
  void on_thread_exited(pid_t tid) override { tracer_.on_thread_exited(tid); }
  void on_exec(pid_t tid) override { tracer_.on_exec(tid); }
  bool pass_trace_breakpoint(stub::process::TracedThreadControl& control, pid_t tid) override {
    snapshot_.bind(control);
    return tracer_.pass_trace_breakpoint(snapshot_, tid);
  }

 private:
  stub::process::TraceHook& tracer_;
  stub::tracing::TraceBackend& backend_;
  SnapshotControl& snapshot_;
};

// Where the program's ELF file is loaded: the lowest mapping of its file.
uint64_t load_base(pid_t pid) {
  char exe[4096];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = 0;
  std::FILE* maps = std::fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "r");
  if (maps == nullptr) return 0;
  char line[4608];
  uint64_t base = 0;
  while (base == 0 && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long long begin = 0;
    const char* path = std::strchr(line, '/');
    if (path != nullptr && std::strncmp(path, exe, static_cast<std::size_t>(n)) == 0 &&
        std::sscanf(line, "%llx-", &begin) == 1) {
      base = begin;
    }
  }
  std::fclose(maps);
  return base;
}

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

bool is_rep_string(stub::process::Process& process, decoder::InstructionDecoder& decoder, uint64_t pc) {
  auto bytes = process.read_memory(pc, decoder::kMaxInstructionSize);
  if (!bytes) return false;
  auto insn = decoder::decode_with_fallback(decoder, pc, bytes->data(), bytes->size());
  return insn && insn->text.rfind("rep", 0) == 0;
}

// Under some hypervisors a single step over cpuid (emulated by the
// hypervisor) loses its trap and stops one instruction later. The
// instruction skipped is the one after cpuid: its address, or 0.
uint64_t skipped_after_cpuid(stub::process::Process& process, decoder::InstructionDecoder& decoder, uint64_t from,
                             uint64_t landed) {
  auto bytes = process.read_memory(from, decoder::kMaxInstructionSize);
  if (!bytes) return 0;
  auto insn = decoder::decode_with_fallback(decoder, from, bytes->data(), bytes->size());
  if (!insn || insn->text != "cpuid" || landed == insn->next_address()) return 0;
  return insn->next_address();
}

// Runs `tid` on from a stop with a breakpoint at `at` until its next event;
// the breakpoint is taken out again if the thread stopped.
Expected<stub::process::ProcessEvent> run_to_breakpoint(stub::process::Process& p, pid_t tid, uint64_t at) {
  if (auto r = p.insert_breakpoint(at); !r) return r.error();
  auto event = p.resume(tid, stub::process::StepKind::Continue, 0)
                   ? p.wait_event()
                   : Expected<stub::process::ProcessEvent>(make_error(ErrorCode::Internal, "cannot resume"));
  if (event && event->kind == stub::process::ProcessEvent::Kind::Stopped) {
    if (auto r = p.remove_breakpoint(at); !r) return r.error();
  }
  return event;
}

// Runs a thread that has just entered the vDSO (by a call or a tail jump:
// its return address at `rsp`, on top of the stack) to where it leaves,
// instead of stepping through it. Its time functions retry their read
// while the clock's data changes under them, and single-stepped (a stop
// per instruction) they kept missing: one run stepped 3.1 million
// instructions there instead of about 30 (90 s under the sanitizers for
// a program stepped whole in 15). The comparison skips the vDSO's paths
// anyway (trace_fidelity.cc). The stop it ends with: the breakpoint at
// the return address, or any other stop (a signal), the breakpoint taken
// out, from which the caller steps on.
Expected<stub::process::ProcessEvent> run_over_vdso(stub::process::Process& p, pid_t tid, uint64_t rsp) {
  auto slot = p.read_memory(rsp, 8);
  if (!slot || slot->size() != 8) return make_error(ErrorCode::Internal, "cannot read the vDSO call's return address");
  uint64_t return_address = 0;
  std::memcpy(&return_address, slot->data(), 8);
  return run_to_breakpoint(p, tid, return_address);
}

// A signal stop that is not a trap is handed back with the next resume, as a
// client passing every signal would.
int signal_to_deliver(const stub::process::ProcessEvent& event) { return event.signal == SIGTRAP ? 0 : event.signal; }

// Runs the fresh program to `base + offset` (a user breakpoint), if nonzero.
Expected<void> run_to_start(stub::process::Process& p, uint64_t offset) {
  if (offset == 0) return {};
  auto event = run_to_breakpoint(p, p.pid(), load_base(p.pid()) + offset);
  if (!event) return event.error();
  if (event->kind != stub::process::ProcessEvent::Kind::Stopped || !event->software_breakpoint) {
    return make_error(ErrorCode::Internal, "the program did not reach the start address");
  }
  return {};
}

}  // namespace

Expected<RunResult> run_reference(const stub::process::LaunchOptions& launch, uint64_t max_stops,
                                  uint64_t start_offset) {
  auto process = stub::process::PtraceProcess::launch(launch);
  if (!process) return process.error();
  stub::process::Process& p = **process;
  const pid_t tid = p.pid();
  if (auto r = run_to_start(p, start_offset); !r) return r.error();
  auto made = decoder::InstructionDecoder::create();
  if (!made) return made.error();
  decoder::InstructionDecoder& decoder = *made;
  RunResult result;
  const auto start = Clock::now();
  auto first = position_of(p, tid);
  if (!first) return first.error();
  std::tie(result.vdso_begin, result.vdso_end) = vdso_range(tid);
  result.load_base = load_base(tid);
  result.pcs.push_back(first->pc);
  result.stacks.push_back(first->stack);
  int signal = 0;
  auto in_vdso = [&](uint64_t pc) { return pc >= result.vdso_begin && pc < result.vdso_end; };
  while (result.stops < max_stops) {
    Expected<stub::process::ProcessEvent> event = make_error(ErrorCode::Internal, "no event");
    const bool entered_vdso = result.pcs.size() >= 2 && in_vdso(result.pcs.back()) &&
                              !in_vdso(result.pcs[result.pcs.size() - 2]) && signal == 0;
    if (entered_vdso) {
      event = run_over_vdso(p, tid, result.stacks.back().rsp);
    } else {
      if (auto r = p.resume(tid, stub::process::StepKind::SingleStep, signal); !r) return r.error();
      event = p.wait_event();
    }
    if (!event) return event.error();
    ++result.stops;
    if (event->kind == stub::process::ProcessEvent::Kind::Exited) {
      result.exit_code = event->exit_code;
      result.seconds = since(start);
      return result;
    }
    if (event->kind == stub::process::ProcessEvent::Kind::Killed) break;
    auto at = position_of(p, event->tid);
    if (!at) return at.error();
    const uint64_t* pc = &at->pc;
    // The same position seen twice is one instruction: a signal stop right
    // after a step (nothing ran in between), or a rep-string instruction,
    // which single-steps once per iteration. Only a branch to itself really
    // runs again in place.
    if (event->single_stepped) {
      if (uint64_t skipped = skipped_after_cpuid(p, decoder, result.pcs.back(), *pc)) {
        result.pcs.push_back(skipped);
        result.stacks.push_back(at->stack);  // cpuid leaves rsp and rbp alone
      }
    }
    if (*pc != result.pcs.back() || (event->single_stepped && !is_rep_string(p, decoder, *pc))) {
      result.pcs.push_back(*pc);
      result.stacks.push_back(at->stack);
    }
    signal = signal_to_deliver(*event);
  }
  return make_error(ErrorCode::Internal, "reference run did not reach the exit");
}

bool unusable_here(stub::tracing::TraceStops stops) {
  if (stops != stub::tracing::TraceStops::DebugRegister || stub::process::PtraceProcess::debug_registers_work())
    return false;
  std::fprintf(stderr, "SKIP: debug-register trace stops: debug registers never trap here\n");
  return true;
}

namespace {

// The tracer a run records with: the software tracer btstub would run, or
// the translating tracer over it (which owns the software tracer it falls
// back on); the hook the process calls and the backend whose traces are read.
struct Tracers {
  std::unique_ptr<stub::tracing::SoftwareTracer> software;
  std::unique_ptr<stub::tracing::TranslatingTracer> translator;
  stub::tracing::SoftwareTracer& ptrace_tracer() { return translator ? translator->ptrace_tracer() : *software; }
  stub::process::TraceHook& hook() {
    return translator ? static_cast<stub::process::TraceHook&>(*translator) : *software;
  }
  stub::tracing::TraceBackend& backend() {
    return translator ? static_cast<stub::tracing::TraceBackend&>(*translator) : *software;
  }
};

Expected<Tracers> make_tracers(stub::tracing::TraceStops stops, bool enable_all, bool translate) {
  auto created = stub::tracing::SoftwareTracer::create(
      stub::tracing::TraceConfig{uint64_t{1} << 26, decoder::OverflowPolicy::Stop}, enable_all, stops);
  if (!created) return created.error();
  Tracers tracers;
  tracers.software = std::move(*created);
  if (translate) {
    auto made = stub::tracing::TranslatingTracer::create(std::move(tracers.software));
    if (!made) return made.error();
    tracers.translator = std::move(*made);
  }
  return tracers;
}

}  // namespace

Expected<RunResult> run_software(const stub::process::LaunchOptions& launch, uint64_t last_pc,
                                 std::optional<stub::tracing::TraceStops> wanted, uint64_t start_offset,
                                 bool translate) {
  // int3 trace stops, as btstub uses them (stub/server/server.cc), the
  // translating tracer over them when `translate`.
  const auto stops = wanted.value_or(stub::tracing::TraceStops::Breakpoint);
  auto made = make_tracers(stops, /*enable_all=*/start_offset == 0, translate);
  if (!made) return made.error();
  Tracers& tracers = *made;
  stub::tracing::SoftwareTracer* tracer = &tracers.ptrace_tracer();
  stub::tracing::TranslatingTracer* translator = tracers.translator.get();
  stub::process::TraceHook& traced_by = tracers.hook();
  stub::tracing::TraceBackend& backend = tracers.backend();
  auto process = stub::process::PtraceProcess::launch(launch);
  if (!process) return process.error();
  stub::process::PtraceProcess& p = **process;
  if (translator) translator->adopt_threads(p.threads());
  SnapshotControl snapshot(p);
  SnapshotHook hook(traced_by, backend, snapshot);
  p.set_trace_hook(&hook);
  const pid_t tid = p.pid();
  if (auto r = run_to_start(p, start_offset); !r) return r.error();
  if (start_offset != 0) (void)backend.enable_all();  // traced from its next resume
  RunResult result;
  const auto start = Clock::now();
  int signal = 0;
  for (;;) {
    if (auto r = p.resume(tid, stub::process::StepKind::Continue, signal); !r) return r.error();
    auto event = p.wait_event();
    if (!event) return event.error();
    ++result.stops;
    if (event->kind == stub::process::ProcessEvent::Kind::Exited) {
      result.exit_code = event->exit_code;
      break;
    }
    if (event->kind == stub::process::ProcessEvent::Kind::Killed)
      return make_error(ErrorCode::Internal, "program killed");
    signal = signal_to_deliver(*event);
  }
  result.seconds = since(start);
  p.set_trace_hook(nullptr);
  result.tracer_stats = tracer->stats();
  result.stepping_only = stops == stub::tracing::TraceStops::SingleStep;
  result.trace_stops = stops;
  if (translator) result.translated_branches = translator->stats().branches;
  const decoder::BlockTrace* trace = backend.trace(tid);
  if (trace == nullptr) return make_error(ErrorCode::Internal, "no trace for the main thread");
  if (trace->lost_since(0) || trace->full()) return make_error(ErrorCode::Internal, "trace buffer full");
  result.trace_branches = trace->size();
  if (trace->has_stacks()) {
    for (uint64_t s = trace->first_sequence(); s < trace->end_sequence(); ++s) {
      result.branches.emplace_back(trace->at(s), trace->stack_at(s));
    }
  }
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
  stub::tracing::BlockCache blocks(std::move(made).value());
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

Expected<std::pair<uint64_t, uint64_t>> section_range(const std::string& path, const std::string& name) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return make_error(ErrorCode::IoError, "cannot open " + path);
  std::vector<char> bytes;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file)) > 0;) bytes.insert(bytes.end(), buf, buf + n);
  std::fclose(file);
  if (bytes.size() < sizeof(Elf64_Ehdr)) return make_error(ErrorCode::InvalidArgument, path + ": not ELF");
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  auto header = [&](unsigned i, Elf64_Shdr& sh) {
    const uint64_t at = eh.e_shoff + uint64_t{i} * eh.e_shentsize;
    if (at + sizeof sh > bytes.size()) return false;
    std::memcpy(&sh, bytes.data() + at, sizeof sh);
    return true;
  };
  Elf64_Shdr names;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || !header(eh.e_shstrndx, names)) {
    return make_error(ErrorCode::InvalidArgument, path + ": no section headers");
  }
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!header(i, sh) || names.sh_offset + sh.sh_name >= bytes.size()) continue;
    if (name == bytes.data() + names.sh_offset + sh.sh_name) return std::make_pair(sh.sh_addr, sh.sh_addr + sh.sh_size);
  }
  return make_error(ErrorCode::InvalidArgument, path + ": no section " + name);
}

Expected<ThreadRuns> run_software_threads(const stub::process::LaunchOptions& launch, stub::tracing::TraceStops stops,
                                          bool trace_one, bool translate) {
  auto made = make_tracers(stops, /*enable_all=*/!trace_one, translate);
  if (!made) return made.error();
  Tracers& tracers = *made;
  stub::tracing::SoftwareTracer* tracer = &tracers.ptrace_tracer();
  stub::tracing::TranslatingTracer* translator = tracers.translator.get();
  stub::process::TraceHook& traced_by = tracers.hook();
  stub::tracing::TraceBackend& backend = tracers.backend();
  auto process = stub::process::PtraceProcess::launch(launch);
  if (!process) return process.error();
  stub::process::PtraceProcess& p = **process;
  if (translator) translator->adopt_threads(p.threads());
  SnapshotControl snapshot(p);
  SnapshotHook hook(traced_by, backend, snapshot);
  hook.trace_first_created = trace_one;
  p.set_trace_hook(&hook);
  ThreadRuns result;
  result.load_base = load_base(p.pid());
  const auto start = Clock::now();
  std::map<pid_t, int> signals;
  for (;;) {
    // All-stop: every thread resumes after any reported event.
    for (pid_t tid : p.threads()) {
      if (auto r = p.resume(tid, stub::process::StepKind::Continue, signals[tid]); !r) return r.error();
      signals[tid] = 0;
    }
    auto event = p.wait_event();
    if (!event) return event.error();
    if (event->kind == stub::process::ProcessEvent::Kind::Exited) {
      result.exit_code = event->exit_code;
      break;
    }
    if (event->kind == stub::process::ProcessEvent::Kind::Killed)
      return make_error(ErrorCode::Internal, "program killed");
    if (event->kind == stub::process::ProcessEvent::Kind::Stopped) signals[event->tid] = signal_to_deliver(*event);
  }
  result.seconds = since(start);
  p.set_trace_hook(nullptr);
  result.tracer_stats = tracer->stats();
  if (translator) result.translated_branches = translator->stats().branches;
  auto decoder = decoder::InstructionDecoder::create();
  if (!decoder) return decoder.error();
  SnapshotReader code(snapshot.pages());
  std::vector<pid_t> tids = hook.created;
  if (!trace_one) tids.insert(tids.begin(), p.pid());
  for (pid_t tid : tids) {
    const decoder::BlockTrace* trace = backend.trace(tid);
    if (trace == nullptr || trace->size() == 0) continue;
    if (trace->lost_since(0) || trace->full()) return make_error(ErrorCode::Internal, "trace buffer full");
    result.branches += trace->size();
    // The thread is gone: its history ends where its last branch went.
    const uint64_t last = trace->at(trace->end_sequence() - 1).to;
    auto pcs = decoder::instruction_history(*decoder, code, trace->blocks(trace->first_sequence(), last));
    if (!pcs) return pcs.error();
    result.pcs[tid] = std::move(*pcs);
  }
  return result;
}

std::vector<std::vector<uint64_t>> runs_within(const std::vector<uint64_t>& pcs, uint64_t begin, uint64_t end) {
  std::vector<std::vector<uint64_t>> runs;
  bool inside = false;
  for (uint64_t pc : pcs) {
    const bool in = pc >= begin && pc < end;
    if (in && !inside) runs.emplace_back();
    if (in) runs.back().push_back(pc);
    inside = in;
  }
  return runs;
}

}  // namespace tracing
