#include "stub/tracing/backend_probe.h"

#include <cstring>
#include <sstream>

#include "stub/tracing/perf_backend.h"

namespace stub::tracing {

std::string errno_text(int err) { return std::strerror(err); }

std::string cpu_vendor(const std::array<uint32_t, 4>& leaf0) {
  char vendor[13] = {};
  std::memcpy(vendor, &leaf0[1], 4);
  std::memcpy(vendor + 4, &leaf0[3], 4);
  std::memcpy(vendor + 8, &leaf0[2], 4);
  return vendor;
}

namespace {

std::optional<int64_t> read_integer(PerfSeam& seam, const std::string& path) {
  auto text = seam.read_file(path);
  if (!text) return std::nullopt;
  try {
    return std::stoll(*text);
  } catch (...) {
    return std::nullopt;
  }
}

void probe_cpu(PerfSeam& seam, ProbeFindings& f) {
  auto leaf0 = seam.cpuid(0, 0);
  f.vendor = cpu_vendor(leaf0);
  if (leaf0[0] < 1) return;
  auto leaf1 = seam.cpuid(1, 0);
  unsigned base_family = (leaf1[0] >> 8) & 0xf;
  unsigned base_model = (leaf1[0] >> 4) & 0xf;
  f.family = base_family == 0xf ? base_family + ((leaf1[0] >> 20) & 0xff) : base_family;
  f.model = base_family == 0x6 || base_family == 0xf ? base_model | (((leaf1[0] >> 16) & 0xf) << 4) : base_model;
  f.cpu_has_ds = (leaf1[3] >> 21) & 1;
  if (leaf0[0] >= 7) f.cpu_has_pt = (seam.cpuid(7, 0)[1] >> 25) & 1;
}

// Opens `attr` for the calling thread and closes it again.
std::string trial_open(PerfSeam& seam, const perf_event_attr& attr) {
  auto fd = seam.open_event(attr, 0);
  if (!fd) return errno_text(fd.error.err);
  seam.close_event(*fd.value);
  return {};
}

// Why a PMU backend is not taken, for auto's reason.
std::string pmu_absence(bool pmu, const char* name, const std::string& error, bool detail) {
  if (!pmu) return std::string("no ") + name + " PMU";
  return std::string(name) + " does not open" + (detail ? " (" + error + ")" : "");
}

// intel_pt first: it loses the least (a bit per conditional branch, the
// CPU barely slowed), then intel_bts, then perf BTS, then software.
void choose(ProbeFindings& f) {
  const std::string pt_absent = pmu_absence(f.intel_pt_pmu, "intel_pt", f.intel_pt_error, true);
  if (f.intel_pt_pmu && f.intel_pt_error.empty()) {
    f.auto_choice = TraceBackendChoice::IntelPt;
    f.auto_reason = "the intel_pt PMU opens for a thread";
  } else if (f.intel_bts_pmu && f.intel_bts_error.empty()) {
    f.auto_choice = TraceBackendChoice::IntelBts;
    f.auto_reason = pt_absent + ", but the intel_bts PMU opens for a thread";
  } else if (f.perf_bts_error.empty()) {
    f.auto_choice = TraceBackendChoice::PerfBts;
    f.auto_reason = pt_absent + ", " + pmu_absence(f.intel_bts_pmu, "intel_bts", f.intel_bts_error, true) +
                    ", but a perf BTS event opens for a thread";
  } else {
    f.auto_choice = TraceBackendChoice::Software;
    f.auto_reason = "no branch-trace hardware: " + pmu_absence(f.intel_pt_pmu, "intel_pt", f.intel_pt_error, false) +
                    ", " + pmu_absence(f.intel_bts_pmu, "intel_bts", f.intel_bts_error, false) +
                    " and perf_event_open(BTS) failed (" + f.perf_bts_error + ")";
  }
}

std::string optional_text(const std::optional<uint64_t>& v, const char* none) {
  return v ? std::to_string(*v) : std::string(none);
}

}  // namespace

std::string_view backend_name(TraceBackendChoice choice) {
  switch (choice) {
    case TraceBackendChoice::Auto: return "auto";
    case TraceBackendChoice::Software: return "software";
    case TraceBackendChoice::PerfBts: return "perf-bts";
    case TraceBackendChoice::IntelBts: return "intel-bts";
    case TraceBackendChoice::IntelPt: return "intel-pt";
  }
  return "?";
}

std::optional<uint32_t> intel_bts_pmu_type(PerfSeam& seam) {
  auto type = read_integer(seam, std::string(kIntelBtsPmuDir) + "/type");
  if (!type || *type < 0 || *type > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*type);
}

std::optional<uint32_t> intel_pt_pmu_type(PerfSeam& seam) {
  auto type = read_integer(seam, std::string(kIntelPtPmuDir) + "/type");
  if (!type || *type < 0 || *type > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*type);
}

ProbeFindings probe_backends(PerfSeam& seam) {
  ProbeFindings f;
  probe_cpu(seam, f);
  f.intel_bts_type = intel_bts_pmu_type(seam);
  f.intel_bts_pmu = f.intel_bts_type.has_value();
  f.intel_pt_type = intel_pt_pmu_type(seam);
  f.intel_pt_pmu = f.intel_pt_type.has_value();
  if (auto p = read_integer(seam, "/proc/sys/kernel/perf_event_paranoid")) f.paranoid = static_cast<int>(*p);
  if (auto kb = read_integer(seam, "/proc/sys/kernel/perf_event_mlock_kb"); kb && *kb >= 0) {
    f.mlock_kb = static_cast<uint64_t>(*kb);
  }
  f.memlock_limit = seam.memlock_limit();
  f.perf_bts_error = trial_open(seam, perf_bts_attr());
  f.intel_bts_error = f.intel_bts_type ? trial_open(seam, intel_bts_attr(*f.intel_bts_type))
                                       : std::string("no such PMU");
  f.intel_pt_error = f.intel_pt_type ? trial_open(seam, intel_pt_attr(*f.intel_pt_type)) : std::string("no such PMU");
  choose(f);
  return f;
}

std::string format_probe(const ProbeFindings& f) {
  std::ostringstream out;
  out << "cpu: " << (f.vendor.empty() ? "unknown" : f.vendor) << " family " << f.family << " model " << f.model
      << (f.cpu_has_ds ? " (Debug Store: yes" : " (Debug Store: no")
      << (f.cpu_has_pt ? ", Processor Trace: yes)" : ", Processor Trace: no)") << "\n";
  out << "intel_pt PMU: ";
  if (f.intel_pt_pmu) out << "yes, type " << *f.intel_pt_type << "\n";
  else out << "no (" << kIntelPtPmuDir << " does not exist)\n";
  out << "intel_bts PMU: ";
  if (f.intel_bts_pmu) out << "yes, type " << *f.intel_bts_type << "\n";
  else out << "no (" << kIntelBtsPmuDir << " does not exist)\n";
  out << "perf_event_paranoid: " << (f.paranoid ? std::to_string(*f.paranoid) : std::string("unknown")) << "\n";
  out << "perf_event_mlock_kb: " << optional_text(f.mlock_kb, "unknown") << "\n";
  out << "RLIMIT_MEMLOCK: " << optional_text(f.memlock_limit, "unlimited") << "\n";
  out << "perf-bts event for a thread: "
      << (f.perf_bts_error.empty() ? std::string("opens") : "fails: " + f.perf_bts_error) << "\n";
  out << "intel-bts event for a thread: "
      << (f.intel_bts_error.empty() ? std::string("opens") : "fails: " + f.intel_bts_error) << "\n";
  out << "intel-pt event for a thread: "
      << (f.intel_pt_error.empty() ? std::string("opens") : "fails: " + f.intel_pt_error) << "\n";
  out << "auto picks: " << backend_name(f.auto_choice) << " (" << f.auto_reason << ")\n";
  return out.str();
}

btstub::Expected<TraceBackendChoice> resolve_backend(const ProbeFindings& f, TraceBackendChoice requested) {
  std::string vendor = f.vendor.empty() ? std::string("unknown") : f.vendor;
  std::string hint = vendor != "GenuineIntel"
                         ? "no branch-trace hardware: this CPU is " + vendor
                         : vendor + " family " + std::to_string(f.family) + " model " + std::to_string(f.model) +
                               ", perf_event_paranoid " + (f.paranoid ? std::to_string(*f.paranoid) : "unknown");
  auto missing = [&](const std::string& what) {
    return btstub::make_error(btstub::ErrorCode::NotSupported,
                              "--backend=" + std::string(backend_name(requested)) + ": " + what + " (" + hint + ")");
  };
  switch (requested) {
    case TraceBackendChoice::Auto: return f.auto_choice;
    case TraceBackendChoice::Software: return requested;
    case TraceBackendChoice::PerfBts:
      if (!f.perf_bts_error.empty()) return missing("perf_event_open(BTS) failed: " + f.perf_bts_error);
      return requested;
    case TraceBackendChoice::IntelBts:
      if (!f.intel_bts_pmu) return missing(std::string("no intel_bts PMU: ") + kIntelBtsPmuDir + " does not exist");
      if (!f.intel_bts_error.empty()) return missing("perf_event_open(intel_bts) failed: " + f.intel_bts_error);
      return requested;
    case TraceBackendChoice::IntelPt:
      if (!f.intel_pt_pmu) return missing(std::string("no intel_pt PMU: ") + kIntelPtPmuDir + " does not exist");
      if (!f.intel_pt_error.empty()) return missing("perf_event_open(intel_pt) failed: " + f.intel_pt_error);
      return requested;
  }
  return requested;
}

}  // namespace stub::tracing
