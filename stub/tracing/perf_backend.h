#pragma once
// The hardware branch-trace backends, perf BTS and the intel_bts and
// intel_pt PMUs, over the PerfSeam: one perf event per traced thread (threads created later get
// theirs through the TraceHook), its buffers mapped, and the thread's
// BlockTrace refreshed from them whenever the trace is asked for. The
// thread runs at full speed: the hook never absorbs a stop.
#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decoder/pt_decoder.h"
#include "stub/tracing/intel_bts_reader.h"
#include "stub/tracing/intel_pt_reader.h"
#include "stub/tracing/perf_bts_reader.h"
#include "stub/tracing/perf_seam.h"
#include "stub/tracing/trace_backend.h"
#include "stub/process/trace_hook.h"

namespace stub::tracing {

using process::StepKind;
using process::TraceHook;
using process::TraceVerdict;
using process::TracedStop;
using process::TracedThreadControl;

enum class HardwareTrace {
  PerfBts,   // PERF_TYPE_HARDWARE branch instructions, period 1 (BTS underneath)
  IntelBts,  // the intel_bts PMU with an AUX area
  IntelPt,   // the intel_pt PMU with an AUX area, decoded by decoder/pt_decoder
};

// The perf_event_attr each backend opens (user space only).
perf_event_attr perf_bts_attr();
perf_event_attr intel_bts_attr(uint32_t pmu_type);
perf_event_attr intel_pt_attr(uint32_t pmu_type);

// Buffer sizing: pages are a power of two (perf refuses anything else),
// rounded up from `bytes`, then cut to what the locked-memory allowance
// lets an unprivileged user map: perf_event_mlock_kb plus RLIMIT_MEMLOCK
// (nullopt: unknown/unlimited), less the header page.
std::size_t plan_buffer_pages(uint64_t bytes, std::size_t page_size, std::optional<uint64_t> mlock_kb,
                              std::optional<uint64_t> memlock_limit);

class PerfBackend final : public TraceHook, public TraceBackend {
 public:
  struct Options {
    HardwareTrace kind = HardwareTrace::PerfBts;
    uint32_t intel_bts_type = 0;  // the PMU's /sys/.../intel_bts/type
    uint32_t intel_pt_type = 0;   // the PMU's /sys/.../intel_pt/type
    TraceConfig config;
    bool enable_all = false;      // --record
  };
  // `seam` must outlive the backend.
  PerfBackend(PerfSeam& seam, const Options& options);
  ~PerfBackend() override;
  PerfBackend(const PerfBackend&) = delete;
  PerfBackend& operator=(const PerfBackend&) = delete;

  // As SoftwareTracer's: reads a thread's pc for its trace's origin.
  void set_control(TracedThreadControl* control) { control_ = control; }
  void adopt_threads(const std::vector<pid_t>& tids);
  void forget_process();
  // Why the last event could not be set up (a lazily traced thread under
  // enable_all has nobody to tell), empty when none failed.
  const std::string& last_error() const { return last_error_; }
  std::string problem() const override { return last_error_; }
  // The perf event fd of a traced thread (-1 if none), for tests.
  int event_fd(pid_t tid) const;

  // ---- TraceHook ----
  bool traces(pid_t tid) const override;
  StepKind before_resume(TracedThreadControl& control, pid_t tid, StepKind requested, int signal) override;
  TraceVerdict on_stop(TracedThreadControl& control, const TracedStop& stop) override;
  void on_thread_created(pid_t tid, pid_t parent) override;
  void on_thread_exited(pid_t tid) override;
  void on_exec(pid_t tid) override;

  // ---- TraceBackend ----
  std::string_view name() const override;
  void set_config(const TraceConfig& config) override { config_ = config; }
  TraceConfig config() const override { return config_; }
  Expected<void> enable(pid_t tid) override;
  Expected<void> disable(pid_t tid) override;
  bool enabled(pid_t tid) const override;
  Expected<void> enable_all() override;
  void disable_all() override;
  bool all_enabled() const override { return all_enabled_; }
  // Refreshes the trace from the thread's buffer first.
  const decoder::BlockTrace* trace(pid_t tid) const override;
  Expected<TraceConfig> thread_config(pid_t tid) const override;
  // Hardware cannot stop the program when its buffer fills.
  bool stopped_full(pid_t) const override { return false; }

 private:
  struct Mapping {
    void* addr = nullptr;
    std::size_t length = 0;
  };
  struct Thread {
    bool enabled = false;
    bool exited = false;
    bool origin_known = false;
    int fd = -1;
    Mapping ring;  // header page + data ring
    Mapping aux;   // intel_bts and intel_pt
    TraceConfig config;  // buffer_bytes: as mapped
    std::unique_ptr<decoder::BlockTrace> trace;
    PerfBtsReader perf_reader;
    IntelBtsReader intel_reader;
    IntelPtReader pt_reader;
    decoder::PtStreamDecoder pt_decoder;
  };

  Expected<void> start(Thread& t, pid_t tid, bool stopped);
  Expected<void> open_event(Thread& t, pid_t tid);
  // `size_field`: the header's aux_size, which must equal each attempt's length.
  Expected<Mapping> map_halving(int fd, std::size_t pages, std::size_t extra_pages, std::size_t offset,
                                bool writable, const char* what, pid_t tid, __u64* size_field = nullptr);
  void close_event(Thread& t);
  void refresh(Thread& t) const;
  bool uses_aux() const { return options_.kind != HardwareTrace::PerfBts; }
  void learn_origin(Thread& t, pid_t tid, TracedThreadControl* control);
  Thread* lazy_state(pid_t tid);
  std::string prefix(pid_t tid) const;

  PerfSeam& seam_;
  Options options_;
  TraceConfig config_;
  bool all_enabled_ = false;
  TracedThreadControl* control_ = nullptr;
  mutable std::map<pid_t, Thread> threads_;
  std::string last_error_;
};

}  // namespace stub::tracing
