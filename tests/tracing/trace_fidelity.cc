// Fidelity test of the software branch tracer: runs a program once under the
// single-stepping reference and once under SoftwareTracer (--record
// semantics: from the first instruction to the exit) and requires the two
// instruction sequences to be equal, instruction for instruction.
//
//   trace_fidelity [--max-stops N] [--stops auto|breakpoint|step|debugreg]
//                  [--from-section NAME] PROGRAM [ARGS...]
// --from-section: both runs start at the section's first instruction (the
// program's main placed there), skipping the dynamic loader's start-up.
//   (TRACE_FIDELITY_DEBUG=1 also prints the tracer's newest branches)
//
// Prints the counts (instructions, branches, ptrace stops per branch) and the
// wall time of both runs; exit status 0 only when the sequences match.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <algorithm>
#include <optional>
#include <vector>

#include "tests/tracing/reference_tracer.h"

namespace {

void print_context(const char* label, const std::vector<uint64_t>& pcs, std::size_t at) {
  std::fprintf(stderr, "  %s:", label);
  const std::size_t from = at >= 5 ? at - 5 : 0;
  for (std::size_t i = from; i < pcs.size() && i < at + 5; ++i) {
    std::fprintf(stderr, "%s%llx", i == at ? " >" : " ", static_cast<unsigned long long>(pcs[i]));
  }
  std::fprintf(stderr, "\n");
}

struct Comparison {
  bool equal = true;
  std::size_t ref_at = 0, sw_at = 0;  // first difference
  int vdso_resyncs = 0;               // timing-dependent vDSO paths skipped
};

// Instruction for instruction, except inside the vDSO: its time functions
// take timing-dependent paths (e.g. clock_gettime's cycle-delta check; a
// single-stepped run is slow), and the reference runs over each call into
// it without stepping (reference_tracer.cc run_over_vdso), so when the
// runs part ways right after an instruction of the vDSO both are
// followed to where they leave it and must agree again from there.
Comparison compare(const std::vector<uint64_t>& ref, const std::vector<uint64_t>& sw, uint64_t vdso_begin,
                   uint64_t vdso_end) {
  auto in_vdso = [&](uint64_t pc) { return pc >= vdso_begin && pc < vdso_end; };
  Comparison c;
  std::size_t i = 0, j = 0;
  while (i < ref.size() && j < sw.size()) {
    if (ref[i] == sw[j]) {
      ++i, ++j;
      continue;
    }
    // Parted after an instruction of the vDSO (ref[i - 1] == sw[j - 1]),
    // and one of them is still in it.
    if (vdso_end == 0 || i == 0 || !in_vdso(ref[i - 1]) || (!in_vdso(ref[i]) && !in_vdso(sw[j]))) break;
    while (i < ref.size() && in_vdso(ref[i])) ++i;
    while (j < sw.size() && in_vdso(sw[j])) ++j;
    ++c.vdso_resyncs;
  }
  c.equal = i == ref.size() && j == sw.size();
  c.ref_at = i;
  c.sw_at = j;
  return c;
}

// The rsp/rbp each stored branch carries (replay's stack pointer and frame
// pointer) against the reference's registers before the same transfer ran.
// Branches are matched in order: the next reference position going from
// `from` to `to`. Those touching the vDSO are skipped (its timing-dependent
// paths differ between the runs).
struct StackCheck {
  std::size_t checked = 0;
  std::size_t unmatched = 0;  // no such transfer left in the reference
  std::size_t wrong = 0;
  std::string first_wrong;
};

StackCheck check_stacks(const tracing::RunResult& ref, const tracing::RunResult& sw) {
  StackCheck out;
  auto in_vdso = [&](uint64_t addr) { return addr >= ref.vdso_begin && addr < ref.vdso_end; };
  std::size_t cursor = 0;
  for (const auto& [branch, stack] : sw.branches) {
    if (in_vdso(branch.from) || in_vdso(branch.to)) continue;
    std::size_t i = cursor;
    while (i + 1 < ref.pcs.size() && !(ref.pcs[i] == branch.from && ref.pcs[i + 1] == branch.to)) ++i;
    if (i + 1 >= ref.pcs.size()) {
      ++out.unmatched;
      continue;
    }
    cursor = i + 1;
    ++out.checked;
    if (ref.stacks[i] == stack) continue;
    if (out.wrong++ == 0) {
      char text[200];
      std::snprintf(text, sizeof text, "%llx -> %llx: rsp %llx rbp %llx, reference rsp %llx rbp %llx",
                    (unsigned long long)branch.from, (unsigned long long)branch.to, (unsigned long long)stack.rsp,
                    (unsigned long long)stack.rbp, (unsigned long long)ref.stacks[i].rsp,
                    (unsigned long long)ref.stacks[i].rbp);
      out.first_wrong = text;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t max_stops = 20'000'000;
  std::optional<stub::tracing::TraceStops> stops;  // the server's default
  std::string from_section;                // record from the first instruction of this ELF section
  bool translate = false;                  // the translating tracer over int3 trace stops
  int arg = 1;
  while (arg + 1 < argc && argv[arg][0] == '-') {
    const std::string option = argv[arg];
    const std::string value = argv[arg + 1];
    if (option == "--max-stops") {
      max_stops = std::strtoull(value.c_str(), nullptr, 0);
    } else if (option == "--stops" && value == "breakpoint") {
      stops = stub::tracing::TraceStops::Breakpoint;
    } else if (option == "--stops" && value == "step") {
      stops = stub::tracing::TraceStops::SingleStep;
    } else if (option == "--from-section") {
      from_section = value;
    } else if (option == "--stops" && value == "debugreg") {
      stops = stub::tracing::TraceStops::DebugRegister;
    } else if (option == "--stops" && value == "translate") {
      stops = stub::tracing::TraceStops::Breakpoint;
      translate = true;
    } else if (option != "--stops" || value != "auto") {
      break;
    }
    arg += 2;
  }
  if (arg >= argc || argv[arg][0] == '-') {
    std::fprintf(stderr, "usage: trace_fidelity [--max-stops N] [--stops auto|breakpoint|step|debugreg|translate] [--from-section NAME] PROGRAM [ARGS...]\n");
    return 2;
  }
  if (stops && tracing::unusable_here(*stops)) return tracing::kSkipped;
  stub::process::LaunchOptions launch;
  launch.argv.assign(argv + arg, argv + argc);
  launch.stdio_to_stderr = true;

  uint64_t start_offset = 0;
  if (!from_section.empty()) {
    auto section = tracing::section_range(launch.argv[0], from_section);
    if (!section) {
      std::fprintf(stderr, "FAIL: %s\n", section.error().message.c_str());
      return 1;
    }
    start_offset = section->first;
  }
  auto reference = tracing::run_reference(launch, max_stops, start_offset);
  if (!reference) {
    std::fprintf(stderr, "FAIL: reference run: %s\n", reference.error().message.c_str());
    return 1;
  }
  auto software = tracing::run_software(launch, reference->pcs.back(), stops, start_offset, translate);
  if (!software) {
    std::fprintf(stderr, "FAIL: software run: %s\n", software.error().message.c_str());
    return 1;
  }
  const auto& stats = software->tracer_stats;
  const double branches = static_cast<double>(software->trace_branches);
  std::printf("program:            %s\n", launch.argv[0].c_str());
  const char* kind = "debug-register breakpoints";
  if (software->trace_stops == stub::tracing::TraceStops::SingleStep) kind = "single steps";
  if (software->trace_stops == stub::tracing::TraceStops::Breakpoint) kind = "int3 breakpoints with emulated transfers";
  if (translate) kind = "translated code, int3 breakpoints where it falls back (tracer stops: those)";
  std::printf("trace stops:        %s\n", kind);
  std::printf("instructions:       %zu (reference) %zu (software)\n", reference->pcs.size(), software->pcs.size());
  std::printf("taken branches:     %llu\n", static_cast<unsigned long long>(software->trace_branches));
  std::printf("tracer stops:       %llu (trace stops %llu, tracer steps %llu, reported %llu)\n",
              static_cast<unsigned long long>(stats.stops), static_cast<unsigned long long>(stats.trace_stops),
              static_cast<unsigned long long>(stats.steps),
              static_cast<unsigned long long>(stats.stops - stats.absorbed));
  std::printf("emulated transfers: %llu\n", static_cast<unsigned long long>(stats.emulated));
  std::printf("unstopped transfers: %llu\n", static_cast<unsigned long long>(stats.looked_past));
  std::printf("stops per branch:   %.3f\n", branches > 0 ? static_cast<double>(stats.stops) / branches : 0.0);
  if (software->stepping_only) {
    const auto projection = tracing::project_block_mode(reference->pcs, software->code_pages);
    std::printf("projected:          %.3f stops per branch with debug-register trace stops (%llu stops, %llu branches)\n",
                projection.branches > 0 ? static_cast<double>(projection.stops) / projection.branches : 0.0,
                static_cast<unsigned long long>(projection.stops),
                static_cast<unsigned long long>(projection.branches));
  }
  std::printf("time:               reference %.3f s (%llu stops), software %.3f s\n", reference->seconds,
              static_cast<unsigned long long>(reference->stops), software->seconds);
  std::printf("exit codes:         %d (reference) %d (software)\n", reference->exit_code, software->exit_code);

  bool ok = true;
  if (reference->exit_code != software->exit_code) {
    std::fprintf(stderr, "FAIL: exit codes differ\n");
    ok = false;
  }
  const Comparison cmp = compare(reference->pcs, software->pcs, reference->vdso_begin, reference->vdso_end);
  if (cmp.vdso_resyncs > 0) {
    std::printf("vDSO resyncs:       %d (timing-dependent paths inside the vDSO)\n", cmp.vdso_resyncs);
  }
  if (!cmp.equal) {
    std::fprintf(stderr, "FAIL: instruction sequences differ at index %zu (reference) / %zu (software)\n",
                 cmp.ref_at, cmp.sw_at);
    print_context("reference", reference->pcs, cmp.ref_at);
    print_context("software ", software->pcs, cmp.sw_at);
    ok = false;
  }
  if (!software->branches.empty()) {
    const StackCheck stacks = check_stacks(*reference, *software);
    std::printf("stack snapshots:    %zu checked, %zu wrong, %zu not in the reference\n", stacks.checked,
                stacks.wrong, stacks.unmatched);
    if (stacks.wrong > 0 || stacks.unmatched > 0 || stacks.checked == 0) {
      std::fprintf(stderr, "FAIL: stack snapshots differ from the reference (first: %s)\n", stacks.first_wrong.c_str());
      ok = false;
    }
  }
  if (translate) {
    // Not passed with the cache unused: most branches must come from it.
    std::printf("translated code:    %llu of %llu branches\n",
                static_cast<unsigned long long>(software->translated_branches),
                static_cast<unsigned long long>(software->trace_branches));
    if (software->translated_branches * 2 <= software->trace_branches) {
      std::fprintf(stderr, "FAIL: translated code logged too few of the branches\n");
      ok = false;
    }
  }
  std::printf("%s\n", ok ? "PASS: identical instruction sequences" : "FAIL");
  return ok ? 0 : 1;
}
