#pragma once
// Two ways to learn which instructions a single-threaded program executed,
// from its first instruction to its exit:
//  - the reference: single-step every instruction through stub::process::Process and
//    write down each pc (slow, obviously right);
//  - the software tracer under test: run with SoftwareTracer installed as the
//    process layer's trace hook, then expand its blocks into instructions.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "decoder/block_trace.h"
#include "protocol/expected.h"
#include "stub/process/process.h"
#include "stub/tracing/software_tracer.h"

namespace tracing {

// The exit code CTest counts as skipped (SKIP_RETURN_CODE): debug-register
// trace stops asked for on a machine whose debug registers never trap.
inline constexpr int kSkipped = 77;
bool unusable_here(stub::tracing::TraceStops stops);


struct RunResult {
  std::vector<uint64_t> pcs;  // every instruction executed, in order
  std::vector<decoder::StackSnapshot> stacks;  // reference runs: rsp/rbp before each of pcs
  std::vector<std::pair<decoder::Branch, decoder::StackSnapshot>> branches;  // software runs: the trace
  int exit_code = -1;         // -1: killed or did not finish
  double seconds = 0;         // wall time of the run
  uint64_t stops = 0;         // ptrace stops that reached us (reference) or the tracer
  stub::tracing::SoftwareTracer::Stats tracer_stats;  // software runs only
  uint64_t trace_branches = 0;               // software runs only
  uint64_t translated_branches = 0;          // of those, logged by translated code (--stops translate)
  bool stepping_only = false;                // software runs: TraceStops::SingleStep
  stub::tracing::TraceStops trace_stops = stub::tracing::TraceStops::DebugRegister;  // software runs
  uint64_t vdso_begin = 0, vdso_end = 0;     // the [vdso] mapping (reference runs)
  std::map<uint64_t, std::vector<uint8_t>> code_pages;  // software runs: pages the tracer read
  uint64_t load_base = 0;                                // where the program's ELF file is mapped
};

// What SoftwareTracer with TraceStops::DebugRegister would have paid for the
// instruction sequence `pcs` (a machine whose debug registers trap): one
// trace stop per executed control transfer, plus a step per syscall and per
// taken branch back into its own block. Signal deliveries are not counted.
struct Projection {
  uint64_t stops = 0;
  uint64_t branches = 0;  // taken
};
Projection project_block_mode(const std::vector<uint64_t>& pcs,
                              const std::map<uint64_t, std::vector<uint8_t>>& code_pages);

// Each run gives up after `max_stops` stops of the reference (a runaway
// program must not hang the test).
// `start_offset` (both runs): nonzero starts recording only when the program
// first reaches that address of its ELF file (plus the load base), e.g. its
// main, so that a test can skip the dynamic loader's start-up.
btstub::Expected<RunResult> run_reference(const stub::process::LaunchOptions& launch, uint64_t max_stops,
                                          uint64_t start_offset = 0);

// `last_pc`: where the thread was last (the exit syscall): the trace's last
// block ends there. Taken from the reference run because the process is gone
// by the time the trace is read. `stops`: nullopt picks the server's
// default (debug registers where they trap, else int3 trace stops).
btstub::Expected<RunResult> run_software(const stub::process::LaunchOptions& launch, uint64_t last_pc,
                                         std::optional<stub::tracing::TraceStops> stops = std::nullopt,
                                         uint64_t start_offset = 0, bool translate = false);

// A multi-threaded program under SoftwareTracer: each thread's instructions
// as far as its trace goes (threads run concurrently, so there is no single
// reference sequence; see thread_fidelity.cc). `trace_one`: only the first
// thread the program creates is traced, the others run untraced through the
// same code (and over its trace stops).
struct ThreadRuns {
  std::map<pid_t, std::vector<uint64_t>> pcs;
  int exit_code = -1;
  double seconds = 0;
  uint64_t branches = 0;
  uint64_t load_base = 0;
  stub::tracing::SoftwareTracer::Stats tracer_stats;
  uint64_t translated_branches = 0;  // logged by translated code (`translate`)
};
// `translate`: the translating tracer over `stops` (int3s).
btstub::Expected<ThreadRuns> run_software_threads(const stub::process::LaunchOptions& launch,
                                                  stub::tracing::TraceStops stops, bool trace_one,
                                                  bool translate = false);

// [begin, end) of ELF section `name` in the file (add the load base).
btstub::Expected<std::pair<uint64_t, uint64_t>> section_range(const std::string& path, const std::string& name);

// The maximal runs of consecutive pcs inside [begin, end).
std::vector<std::vector<uint64_t>> runs_within(const std::vector<uint64_t>& pcs, uint64_t begin, uint64_t end);

}  // namespace tracing
