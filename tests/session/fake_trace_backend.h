#pragma once
// A TraceBackend whose traces the test writes directly: enable() creates an
// empty BlockTrace starting at the thread's origin, `trace_of(tid)` lets the
// test append branches, and `fail_next` makes the next enable/disable fail.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stub/tracing/trace_backend.h"

namespace test {

class FakeTraceBackend : public stub::tracing::TraceBackend {
 public:
  std::map<pid_t, uint64_t> origins;             // where tracing begins per thread (default 0x401000)
  std::optional<std::string> fail_next;          // next enable/disable fails with this message
  std::vector<std::string> log;                  // "enable 100", "disable 100", "set_config 0x..."
  std::string problem_text;                      // what problem() answers

  std::string problem() const override { return problem_text; }

  std::string_view name() const override { return "fake"; }

  void set_config(const stub::tracing::TraceConfig& config) override {
    config_ = config;
    log.push_back("set_config " + std::to_string(config.buffer_bytes));
  }
  stub::tracing::TraceConfig config() const override { return config_; }

  btstub::Expected<void> enable(pid_t tid) override {
    if (auto failure = take_failure()) return *failure;
    if (enabled(tid)) return btstub::make_error(btstub::ErrorCode::InvalidArgument, "Btrace already enabled.");
    log.push_back("enable " + std::to_string(tid));
    uint64_t origin = origins.count(tid) != 0 ? origins[tid] : 0x401000;
    traces_.erase(tid);
    traces_.emplace(tid, decoder::BlockTrace(origin, decoder::bts_records_for_bytes(config_.buffer_bytes),
                                             config_.overflow));
    thread_configs_[tid] = config_;
    enabled_.insert(tid);
    return {};
  }
  btstub::Expected<void> disable(pid_t tid) override {
    if (auto failure = take_failure()) return *failure;
    if (!enabled(tid)) return btstub::make_error(btstub::ErrorCode::InvalidArgument, "Branch tracing not enabled.");
    log.push_back("disable " + std::to_string(tid));
    enabled_.erase(tid);
    traces_.erase(tid);
    return {};
  }
  bool enabled(pid_t tid) const override { return enabled_.count(tid) != 0; }
  bool all_ = false;
  // Whole-program recording of the fake's one known thread set.
  std::vector<pid_t> all_threads{100};
  btstub::Expected<void> enable_all() override {
    for (pid_t tid : all_threads) {
      if (!enabled(tid)) {
        if (auto done = enable(tid); !done) return done;
      }
    }
    all_ = true;
    return {};
  }
  void disable_all() override {
    for (pid_t tid : all_threads) (void)disable(tid);
    all_ = false;
  }
  bool all_enabled() const override { return all_; }

  const decoder::BlockTrace* trace(pid_t tid) const override {
    auto it = traces_.find(tid);
    return it == traces_.end() ? nullptr : &it->second;
  }
  btstub::Expected<stub::tracing::TraceConfig> thread_config(pid_t tid) const override {
    auto it = thread_configs_.find(tid);
    if (it == thread_configs_.end() || !enabled(tid))
      return btstub::make_error(btstub::ErrorCode::InvalidArgument, "Btrace not enabled.");
    return it->second;
  }
  bool stopped_full(pid_t) const override { return false; }

  // The test's handle on a thread's trace (enabled first).
  decoder::BlockTrace& trace_of(pid_t tid) { return traces_.at(tid); }
  // Replaces a thread's trace (as a backend restarting it would).
  void replace_trace(pid_t tid, decoder::BlockTrace trace) {
    traces_.erase(tid);
    traces_.emplace(tid, std::move(trace));
  }

 private:
  std::optional<btstub::Error> take_failure() {
    if (!fail_next) return std::nullopt;
    auto error = btstub::make_error(btstub::ErrorCode::IoError, *fail_next);
    fail_next.reset();
    return error;
  }

  stub::tracing::TraceConfig config_;
  std::set<pid_t> enabled_;
  std::map<pid_t, decoder::BlockTrace> traces_;
  std::map<pid_t, stub::tracing::TraceConfig> thread_configs_;
};

}  // namespace test
