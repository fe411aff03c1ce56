#pragma once
// The btstub server: starts or attaches to the program, accepts connections
// (TCP or stdio) and serves each with a Session, as gdbserver does. It is
// also the sessions' ProcessFactory: vRun/vAttach/R replace the one program
// it holds.
#include <memory>
#include <vector>

#include "stub/server/options.h"
#include "stub/tracing/perf_backend.h"
#include "stub/process/process.h"
#include "stub/session/session.h"
#include "stub/server/terminal.h"
#include "stub/tracing/software_tracer.h"
#include "stub/tracing/translating_tracer.h"

namespace stub::process {
class PtraceProcess;
}  // namespace stub::process

namespace stub::server {

using btstub::Expected;
using process::Process;
using process::PtraceProcess;
using tracing::PerfBackend;
using tracing::PerfSeam;
using tracing::SoftwareTracer;
using tracing::TraceBackend;
using session::ProcessFactory;

class Server final : public ProcessFactory {
 public:
  explicit Server(CommandLine command_line);
  // Returns the process exit status for main().
  int run();
  // The termination signal that ended run() (0: none): main dies of it
  // once the server is gone (termination_signals.h).
  int ended_by() const { return ended_by_; }

  // ProcessFactory: the previous program is released first.
  Expected<Process*> launch(const std::vector<std::string>& argv, const session::RunSettings& settings) override;
  Expected<Process*> attach(pid_t pid) override;
  std::string default_program() const override;
  Expected<void> may_start_programs() const override;

 private:
  Expected<std::unique_ptr<Process>> start_program();
  btstub::Error refused_by_no_run(const std::string& what);
  Expected<std::unique_ptr<Process>> launch_program(const std::vector<std::string>& argv,
                                                    const session::RunSettings& settings = {});
  // Ends the program's part in a finished connection: a program btstub
  // started is killed, an attached one detached.
  void release_program();
  // The program released as at a connection's end; `signal` (0: none)
  // noted for main, which dies of it. Returns run()'s status.
  int end_on_signal(int signal);
  // Whether a program must run before the first client connects.
  bool starts_with_program() const;
  // Gives a new program to the tracer (its hook and control) and the
  // tracer its threads; returns it as a plain Process.
  std::unique_ptr<Process> trace(std::unique_ptr<PtraceProcess> process);
  int serve_stdio();
  int serve_tcp();
  // The software tracer --trace-stops asks for.
  Expected<std::unique_ptr<SoftwareTracer>> make_software_tracer() const;

  CommandLine command_line_;
  int ended_by_ = 0;
  // The CPU btstub pinned itself to (run(); -1: not pinned), and the
  // others it may use.
  int pinned_cpu_ = -1;
  std::vector<int> spare_cpus_;
  // Destroyed last: the terminal goes back to its owner once every program
  // is gone.
  TerminalLender terminal_;
  std::unique_ptr<Process> process_;
  // One tracer for the server's life: it serves Qbtrace and --record for
  // every program in turn (forget_process() between them).
  std::unique_ptr<SoftwareTracer> tracer_;
  // --trace-stops=translate: the translating tracer, which owns the
  // software tracer it falls back on (tracer_ is then null).
  std::unique_ptr<tracing::TranslatingTracer> translator_;
  // --backend=perf-bts|intel-bts (resolved by main): used instead of tracer_.
  std::unique_ptr<PerfSeam> perf_seam_;
  std::unique_ptr<PerfBackend> hardware_;
  TraceBackend* trace_backend() const;
};

}  // namespace stub::server
