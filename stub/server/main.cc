// btstub entry point: parse the gdbserver-compatible command line and run.
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "stub/tracing/backend_probe.h"
#include "stub/process/ptrace_process.h"
#include "stub/server/malloc_restart.h"
#include "stub/server/options.h"
#include "stub/server/server.h"

int main(int argc, char** argv) {
  const bool started_again = stub::server::restore_given_environment();
  // One arena for every thread: the packing workers' allocations (the
  // chunks they encode) then come from the main heap, which the heap
  // prefaulter faults in ahead (stub/tracing/heap_prefault.h), not from
  // thread arenas whose fresh pages each worker faulted in and the kernel
  // zeroed on its own time (Lua: a worker's system time 0.2-0.4 s, then
  // 0.05 s). Before any thread starts.
  (void)mallopt(M_ARENA_MAX, 1);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto command_line = stub::server::parse_command_line(args);
  if (!command_line) {
    std::fprintf(stderr, "btstub: %s\n\n%s", command_line.error().message.c_str(), stub::server::usage_text().c_str());
    return 1;  // gdbserver's status for a usage error
  }
  if (command_line->mode == stub::server::CommandLine::Mode::Help) {
    std::fputs(stub::server::usage_text().c_str(), stdout);
    return 0;
  }
  if (command_line->mode == stub::server::CommandLine::Mode::Selftest) {
    // gdbserver's words for a build without self tests: gdb's unittest.exp
    // counts the run UNSUPPORTED then.
    std::puts("Selftests have been disabled for this build.");
    return 0;
  }
  if (command_line->mode == stub::server::CommandLine::Mode::Version) {
    std::printf("btstub %s\nA gdbserver-compatible debug server with branch tracing and reverse execution.\n",
                BTSTUB_VERSION);
    return 0;
  }
  if (command_line->mode == stub::server::CommandLine::Mode::Probe) {
    auto seam = stub::tracing::make_linux_perf_seam();
    std::fputs(stub::tracing::format_probe(stub::tracing::probe_backends(*seam)).c_str(), stdout);
    // Not a branch-trace backend, but what Z1-Z4 and --trace-stops=debugreg need.
    std::printf("debug registers: %s\n", stub::process::PtraceProcess::debug_registers_work()
                                               ? "trap (hardware breakpoints and watchpoints work)"
                                               : "never trap here (no hardware breakpoints or watchpoints)");
    return 0;
  }
  if (!started_again) stub::server::restart_with_malloc_settings(argv);
  if (command_line->trace_backend != stub::tracing::TraceBackendChoice::Software) {
    // Resolved before anything starts: an absent backend is a usage error.
    auto seam = stub::tracing::make_linux_perf_seam();
    auto backend = stub::tracing::resolve_backend(stub::tracing::probe_backends(*seam), command_line->trace_backend);
    if (!backend) {
      std::fprintf(stderr, "btstub: %s\n", backend.error().message.c_str());
      return 1;
    }
    command_line->trace_backend = *backend;
  }
  try {
    int status = 0;
    int signal = 0;
    {
      stub::server::Server server(std::move(*command_line));
      status = server.run();
      signal = server.ended_by();
    }
    if (signal != 0) {
      // Every program let go: now die of the signal, as without a handler.
      std::signal(signal, SIG_DFL);
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, signal);
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      std::raise(signal);
    }
    return status;
  } catch (const std::exception& e) {
    // Start-up failures from the libraries (e.g. Asio) end here, never a crash.
    std::fprintf(stderr, "btstub: %s\n", e.what());
    return 1;
  }
}
