// Fidelity of the software branch tracer with threads: a program whose
// threads run deterministic work concurrently through shared code (section
// "traced_work", e.g. tests/programs/trace_threads.c) is run
//  - with the work done serially in the main thread (argument "serial")
//    under the single-stepping reference, and
//  - with the work in concurrent threads under SoftwareTracer, once with
//    every thread traced and once with only the first created thread traced
//    (the untraced ones meet its trace stops in the shared code).
// Each thread's path through the section must equal one reference run of
// the same work, instruction for instruction. With `--stops translate` the
// threads run under the translating tracer (translated code in a cache in
// the program, int3s where it falls back), and most of the branches must
// come from translated code.
//
//   thread_fidelity [--stops breakpoint|step|debugreg|translate] PROGRAM
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "stub/process/ptrace_process.h"
#include "tests/tracing/reference_tracer.h"

namespace {

using Runs = std::vector<std::vector<uint64_t>>;

bool check(const char* label, const tracing::ThreadRuns& software, const Runs& reference, uint64_t begin,
           uint64_t end, std::size_t expected_runs, int expected_exit) {
  Runs runs;
  for (const auto& [tid, pcs] : software.pcs) {
    for (auto& run : tracing::runs_within(pcs, software.load_base + begin, software.load_base + end)) {
      runs.push_back(std::move(run));
    }
  }
  std::size_t instructions = 0;
  for (const auto& run : runs) instructions += run.size();
  const auto& st = software.tracer_stats;
  std::printf("%s: %zu threads traced, %zu runs through the work (%zu instructions), %llu branches, "
              "%llu stops (%llu emulated transfers, %llu steps), %.3f s\n",
              label, software.pcs.size(), runs.size(), instructions,
              static_cast<unsigned long long>(software.branches), static_cast<unsigned long long>(st.stops),
              static_cast<unsigned long long>(st.emulated), static_cast<unsigned long long>(st.steps),
              software.seconds);
  bool ok = true;
  if (software.exit_code != expected_exit) {
    std::fprintf(stderr, "FAIL %s: exit code %d, expected %d\n", label, software.exit_code, expected_exit);
    ok = false;
  }
  if (runs.size() != expected_runs) {
    std::fprintf(stderr, "FAIL %s: %zu runs through the work, expected %zu\n", label, runs.size(), expected_runs);
    return false;
  }
  for (const auto& run : runs) {
    if (std::find(reference.begin(), reference.end(), run) == reference.end()) {
      std::fprintf(stderr, "FAIL %s: a thread's run (%zu instructions from %llx) matches no reference run\n", label,
                   run.size(), static_cast<unsigned long long>(run.empty() ? 0 : run.front()));
      ok = false;
    }
  }
  // Every thread did different work: with all traced, each reference run once.
  Runs sorted = runs, want = reference;
  std::sort(sorted.begin(), sorted.end());
  std::sort(want.begin(), want.end());
  if (expected_runs == reference.size() && sorted != want) {
    std::fprintf(stderr, "FAIL %s: the threads' runs are not the reference runs\n", label);
    ok = false;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  stub::tracing::TraceStops stops = stub::tracing::TraceStops::Breakpoint;  // as btstub (stub/server/server.cc)
  bool translate = false;
  int arg = 1;
  if (arg + 1 < argc && std::string(argv[arg]) == "--stops") {
    const std::string value = argv[arg + 1];
    if (value == "step") stops = stub::tracing::TraceStops::SingleStep;
    if (value == "breakpoint") stops = stub::tracing::TraceStops::Breakpoint;
    if (value == "debugreg") stops = stub::tracing::TraceStops::DebugRegister;
    translate = value == "translate";  // over int3s
    arg += 2;
  }
  if (arg >= argc) {
    std::fprintf(stderr, "usage: thread_fidelity [--stops breakpoint|step|debugreg|translate] PROGRAM\n");
    return 2;
  }
  if (tracing::unusable_here(stops)) return tracing::kSkipped;
  const std::string program = argv[arg];
  auto section = tracing::section_range(program, "traced_work");
  if (!section) {
    std::fprintf(stderr, "FAIL: %s\n", section.error().message.c_str());
    return 1;
  }
  stub::process::LaunchOptions serial;
  serial.argv = {program, "serial"};
  serial.stdio_to_stderr = true;
  auto reference = tracing::run_reference(serial, 20'000'000);
  if (!reference) {
    std::fprintf(stderr, "FAIL: reference run: %s\n", reference.error().message.c_str());
    return 1;
  }
  const Runs ref_runs = tracing::runs_within(reference->pcs, reference->load_base + section->first,
                                             reference->load_base + section->second);
  std::printf("reference: %zu runs through the work, exit code %d, %.3f s\n", ref_runs.size(), reference->exit_code,
              reference->seconds);
  if (ref_runs.empty()) {
    std::fprintf(stderr, "FAIL: the reference never ran the work\n");
    return 1;
  }
  stub::process::LaunchOptions threaded;
  threaded.argv = {program};
  threaded.stdio_to_stderr = true;
  bool ok = true;
  for (bool trace_one : {false, true}) {
    const char* label = trace_one ? "one thread traced" : "all threads traced";
    auto software = tracing::run_software_threads(threaded, stops, trace_one, translate);
    if (!software) {
      std::fprintf(stderr, "FAIL %s: %s\n", label, software.error().message.c_str());
      ok = false;
      continue;
    }
    ok = check(label, *software, ref_runs, section->first, section->second, trace_one ? 1 : ref_runs.size(),
               reference->exit_code) && ok;
    if (translate) {
      // So that the test cannot pass with the cache unused.
      std::printf("%s: translated code logged %llu of %llu branches\n", label,
                  static_cast<unsigned long long>(software->translated_branches),
                  static_cast<unsigned long long>(software->branches));
      if (software->translated_branches * 2 <= software->branches) {
        std::fprintf(stderr, "FAIL %s: translated code logged too few of the branches\n", label);
        ok = false;
      }
    }
  }
  std::printf("%s\n", ok ? "PASS: every thread's run through the work is a reference run" : "FAIL");
  return ok ? 0 : 1;
}
