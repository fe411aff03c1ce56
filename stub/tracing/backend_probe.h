#pragma once
// What branch-trace hardware this machine offers, found once through the
// PerfSeam (cpuid, sysfs, procfs, a trial perf_event_open on the calling
// thread), and which backend --backend=auto picks from it, and why.
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/expected.h"
#include "stub/tracing/perf_seam.h"
#include "stub/tracing/trace_backend.h"

namespace stub::tracing {

inline constexpr const char* kIntelBtsPmuDir = "/sys/bus/event_source/devices/intel_bts";
inline constexpr const char* kIntelPtPmuDir = "/sys/bus/event_source/devices/intel_pt";

// The vendor string of cpuid leaf 0 (eax, ebx, ecx, edx): "GenuineIntel", ...
std::string cpu_vendor(const std::array<uint32_t, 4>& leaf0);

struct ProbeFindings {
  std::string vendor;       // cpuid leaf 0: "GenuineIntel", "AuthenticAMD", ...
  unsigned family = 0;      // display family and model (cpuid leaf 1)
  unsigned model = 0;
  bool cpu_has_ds = false;  // cpuid 1 edx bit 21: Debug Store, which BTS needs
  bool cpu_has_pt = false;  // cpuid 7.0 ebx bit 25: Intel Processor Trace
  bool intel_bts_pmu = false;
  std::optional<uint32_t> intel_bts_type;
  bool intel_pt_pmu = false;
  std::optional<uint32_t> intel_pt_type;
  std::optional<int> paranoid;            // /proc/sys/kernel/perf_event_paranoid
  std::optional<uint64_t> mlock_kb;       // /proc/sys/kernel/perf_event_mlock_kb
  std::optional<uint64_t> memlock_limit;  // RLIMIT_MEMLOCK (nullopt: unlimited)
  // Trial opens for this thread: empty string = it opened.
  std::string perf_bts_error;
  std::string intel_bts_error;
  std::string intel_pt_error;
  TraceBackendChoice auto_choice = TraceBackendChoice::Software;
  std::string auto_reason;
};

ProbeFindings probe_backends(PerfSeam& seam);
// The intel_bts PMU's perf type, when the PMU exists.
std::optional<uint32_t> intel_bts_pmu_type(PerfSeam& seam);
// The intel_pt PMU's perf type, when the PMU exists.
std::optional<uint32_t> intel_pt_pmu_type(PerfSeam& seam);
// The `btstub --probe` report.
std::string format_probe(const ProbeFindings& findings);
// The backend a --backend choice means here: auto resolves to the best one
// available; an absent hardware backend is an error naming what is missing.
btstub::Expected<TraceBackendChoice> resolve_backend(const ProbeFindings& findings, TraceBackendChoice requested);
std::string_view backend_name(TraceBackendChoice choice);

}  // namespace stub::tracing
