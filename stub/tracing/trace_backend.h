#pragma once
// What the session asks of a branch-trace backend (software tracer, perf
// BTS, intel_bts, intel_pt): per-thread on/off, configuration, and the trace itself.
// Packet handlers and replay use only this interface, so they are tested
// with a fake backend.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "decoder/block_trace.h"
#include "protocol/expected.h"

namespace stub::tracing {

using btstub::Expected;
class Checkpoints;
class MapChanges;

struct TraceConfig {
  uint64_t buffer_bytes = 64 * 1024;  // Qbtrace-conf:bts:size / --trace-size
  decoder::OverflowPolicy overflow = decoder::OverflowPolicy::DropOldest;  // --trace-full
};

// --backend: which branch-trace backend serves Qbtrace:bts. Here, not with
// the options, because the backend probe resolves it too.
enum class TraceBackendChoice {
  Auto,      // the best available: intel-pt, intel-bts, perf-bts, then software
  Software,  // stub::tracing::SoftwareTracer
  PerfBts,   // stub::tracing::PerfBackend over a perf BTS sample ring
  IntelBts,  // stub::tracing::PerfBackend over the intel_bts PMU's AUX area
  IntelPt,   // stub::tracing::PerfBackend over the intel_pt PMU's AUX area
};

class TraceBackend {
 public:
  virtual ~TraceBackend() = default;

  virtual std::string_view name() const = 0;  // "software", "perf-bts", ...

  // The configuration newly enabled threads get; a thread keeps the one it
  // was enabled with (as on hardware).
  virtual void set_config(const TraceConfig& config) = 0;
  virtual TraceConfig config() const = 0;

  // Tracing of one thread. enable() on an enabled thread is an error
  // (gdb: "Btrace already enabled."), as is disable() on a disabled one.
  virtual Expected<void> enable(pid_t tid) = 0;
  virtual Expected<void> disable(pid_t tid) = 0;
  virtual bool enabled(pid_t tid) const = 0;
  // Whole-program tracing (--record, monitor record start): every thread,
  // including threads created later.
  virtual Expected<void> enable_all() = 0;
  virtual void disable_all() = 0;
  virtual bool all_enabled() const = 0;

  // The thread's trace (also after the thread exited, until forgotten), or
  // nullptr when it has none.
  virtual const decoder::BlockTrace* trace(pid_t tid) const = 0;
  // Puts into every thread's trace what packing in the background has
  // finished, after waiting for what it was handed (a stop's drain hands
  // it a whole log of raw branches): `monitor record status` then gives
  // what the history keeps.
  virtual void settle_traces() {}
  // The thread's configuration as enabled (for qXfer:btrace-conf).
  virtual Expected<TraceConfig> thread_config(pid_t tid) const = 0;
  // True when the thread stopped because its buffer filled under
  // OverflowPolicy::Stop (the stop reply then says so).
  virtual bool stopped_full(pid_t tid) const = 0;
  // Why the last thread that should have been traced is not (a thread
  // created under enable_all whose trace could not start: nobody was there
  // to be told); empty when nothing failed. `monitor record status` shows it.
  virtual std::string problem() const { return {}; }
  // How the backend has been getting the branches, for `monitor record
  // status` (e.g. the translating tracer's exits); empty for none.
  virtual std::string activity() const { return {}; }
  // Copies of the program to re-execute from (stub/tracing/checkpoints.h),
  // kept while recording; nullptr for a backend without them.
  virtual Checkpoints* checkpoints() const { return nullptr; }
  // Where the memory map changed during the recording, by the system calls
  // the tracer saw (stub/tracing/map_changes.h); nullptr when it sees none.
  virtual const MapChanges* map_changes() const { return nullptr; }
  // The client wrote [begin, end) of the program's memory at a stop (M,
  // X): code the tracer decoded or translated from there is stale, and
  // the past before the write did not hold these bytes.
  virtual void client_wrote(uint64_t begin, uint64_t end) {
    (void)begin;
    (void)end;
  }
  // The client wrote registers of `tid` at a stop (G, P), where the thread
  // stood at `pc_before` with `stack_before`: a copy of the program taken
  // before would re-run without them; and where the pc moved (gdb's
  // `return`, `jump`, an inferior call and the restore after it) the
  // thread goes on elsewhere with no branch of its own to say so.
  virtual void client_wrote_registers(pid_t tid, uint64_t pc_before, const decoder::StackSnapshot& stack_before) {
    (void)tid;
    (void)pc_before;
    (void)stack_before;
  }
  // monitor record size: a new buffer size for every thread's running trace
  // and for threads enabled later. A smaller bound drops the oldest
  // branches; a larger one costs nothing until used.
  virtual Expected<void> set_bound(uint64_t buffer_bytes) {
    (void)buffer_bytes;
    return btstub::make_error(btstub::ErrorCode::NotSupported,
                              std::string(name()) + " buffers keep the size they were enabled with");
  }
};

}  // namespace stub::tracing
