#pragma once
// Two ways to learn which instructions a single-threaded program executed,
// from its first instruction to its exit:
//  - the reference: single-step every instruction through stub::Process and
//    write down each pc (slow, obviously right);
//  - the software tracer under test: run with SoftwareTracer installed as the
//    process layer's trace hook, then expand its blocks into instructions.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/expected.h"
#include "stub/process.h"
#include "stub/software_tracer.h"

namespace tracing {

struct RunResult {
  std::vector<uint64_t> pcs;  // every instruction executed, in order
  int exit_code = -1;         // -1: killed or did not finish
  double seconds = 0;         // wall time of the run
  uint64_t stops = 0;         // ptrace stops that reached us (reference) or the tracer
  stub::SoftwareTracer::Stats tracer_stats;  // software runs only
  uint64_t trace_branches = 0;               // software runs only
  bool stepping_only = false;                // software runs: TraceStops::SingleStep
  uint64_t vdso_begin = 0, vdso_end = 0;     // the [vdso] mapping (reference runs)
  std::map<uint64_t, std::vector<uint8_t>> code_pages;  // software runs: pages the tracer read
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
btstub::Expected<RunResult> run_reference(const stub::LaunchOptions& launch, uint64_t max_stops);

// `last_pc`: where the thread was last (the exit syscall): the trace's last
// block ends there. Taken from the reference run because the process is gone
// by the time the trace is read.
btstub::Expected<RunResult> run_software(const stub::LaunchOptions& launch, uint64_t last_pc);

}  // namespace tracing
