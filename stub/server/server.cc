#include "stub/server/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <csignal>
#include <thread>
#include <cstdio>

#include "stub/tracing/backend_probe.h"
#include "stub/tracing/trace_size.h"
#include "stub/server/connection.h"
#include "stub/server/cpu_affinity.h"
#include "stub/server/cpu_choice.h"
#include "stub/server/malloc_restart.h"
#include "stub/process/ptrace_process.h"
#include "stub/process/shell_command.h"

namespace stub::server {

using process::LaunchOptions;
using tracing::HardwareTrace;
using tracing::TraceStops;
using tracing::intel_bts_pmu_type;
using tracing::intel_pt_pmu_type;
using tracing::make_linux_perf_seam;
using session::SessionConfig;
using session::SessionHandover;

namespace asio = boost::asio;
using asio::ip::tcp;

Server::Server(CommandLine command_line) : command_line_(std::move(command_line)) {}

// Every program btstub starts or attaches to; the backend forgets the one
// before. Whole-program recording that `monitor record start` turned on
// was for the program it was given in, as gdb's `record` is: a new one is
// recorded from its start only under --record.
std::unique_ptr<Process> Server::trace(std::unique_ptr<PtraceProcess> process) {
  const auto hook = [&](auto& backend) {
    backend->forget_process();
    if (!command_line_.record) backend->disable_all();
    backend->set_control(process.get());
    process->set_trace_hook(backend.get());
    backend->adopt_threads(process->threads());
  };
  if (translator_) hook(translator_);
  if (tracer_) hook(tracer_);
  if (hardware_) hook(hardware_);
  return process;
}

TraceBackend* Server::trace_backend() const {
  if (hardware_) return hardware_.get();
  if (translator_) return translator_.get();
  return tracer_.get();
}

namespace {

// The program as gdbserver names it (gdbserver/server.cc, program_path):
// a bare name that is a regular file in the current directory is that
// file, by its absolute path; any other bare name is looked up in PATH.
std::string program_path(const std::string& name) {
  struct stat st {};
  if (name.find('/') != std::string::npos || ::stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return name;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return name;
  return std::string(cwd) + "/" + name;
}

}  // namespace

// btstub's own environment with gdb's changes (`set environment`, `unset
// environment`) applied in order, as gdbserver builds it.
static std::vector<std::string> program_environment(const session::RunSettings& settings) {
  std::vector<std::string> out = current_environment();
  for (const auto& change : settings.environment) {
    const std::string prefix = change.first + "=";
    std::erase_if(out, [&](const std::string& entry) { return entry.starts_with(prefix); });
    if (change.second) out.push_back(prefix + *change.second);
  }
  return out;
}

Expected<std::unique_ptr<Process>> Server::launch_program(const std::vector<std::string>& given,
                                                          const session::RunSettings& settings) {
  std::vector<std::string> argv = given;
  if (!argv.empty()) argv.front() = program_path(argv.front());
  LaunchOptions options;
  options.argv = argv;
  options.wrapper = command_line_.wrapper;
  if (command_line_.startup_with_shell) options.shell = process::startup_shell();
  options.disable_randomization = settings.disable_randomization.value_or(command_line_.disable_randomization);
  if (!settings.environment.empty()) options.environment = program_environment(settings);
  options.working_dir = settings.working_dir;
  options.stdio_to_stderr = command_line_.stdio();
  options.foreground = true;
  auto launched = PtraceProcess::launch(options);
  if (!launched) return launched.error();
  std::fprintf(stderr, "Process %s created; pid = %d\n", argv.front().c_str(), static_cast<int>((*launched)->pid()));
  return trace(std::move(*launched));
}

Expected<std::unique_ptr<Process>> Server::start_program() {
  if (command_line_.mode == CommandLine::Mode::Attach) {
    auto attached = PtraceProcess::attach(command_line_.attach_pid);
    if (!attached) return attached.error();
    std::fprintf(stderr, "Attached; pid = %d\n", command_line_.attach_pid);
    return trace(std::move(*attached));
  }
  return launch_program(command_line_.program);
}

bool Server::starts_with_program() const {
  return command_line_.mode != CommandLine::Mode::Multi || !command_line_.program.empty();
}

std::string Server::default_program() const {
  return command_line_.program.empty() ? std::string() : command_line_.program.front();
}

// --no-run: the program already being debugged stays; nothing else starts.
btstub::Error Server::refused_by_no_run(const std::string& what) {
  std::fprintf(stderr, "%s is disabled (--no-run)\n", what.c_str());
  return btstub::make_error(btstub::ErrorCode::NotSupported, what + " is disabled (--no-run)");
}

Expected<void> Server::may_start_programs() const {
  if (!command_line_.no_run) return {};
  return btstub::make_error(btstub::ErrorCode::NotSupported,
                            "Starting or attaching to programs is disabled (--no-run)");
}

// The old program goes first: two traced programs at once could steal each
// other's wait statuses. Only R (restart) comes here with it live: the
// session refuses a vRun or vAttach until gdb has killed or detached it.
Expected<Process*> Server::launch(const std::vector<std::string>& argv, const session::RunSettings& settings) {
  if (command_line_.no_run) return refused_by_no_run("Running programs");
  release_program();
  auto launched = launch_program(argv, settings);
  if (!launched) {
    std::fprintf(stderr, "%s\n", launched.error().message.c_str());
    return launched.error();
  }
  process_ = std::move(*launched);
  return process_.get();
}

Expected<Process*> Server::attach(pid_t pid) {
  if (command_line_.no_run) return refused_by_no_run("Attaching to programs");
  release_program();
  auto attached = PtraceProcess::attach(pid);
  if (!attached) {
    std::fprintf(stderr, "%s\n", attached.error().message.c_str());
    return attached.error();
  }
  std::fprintf(stderr, "Attached; pid = %d\n", static_cast<int>(pid));
  process_ = trace(std::move(*attached));
  return process_.get();
}

void Server::release_program() {
  if (!process_) return;
  if (tracer_) tracer_->set_control(nullptr);  // the control is the process going away
  if (translator_) translator_->set_control(nullptr);
  if (hardware_) hardware_->set_control(nullptr);
  if (process_->attached()) {
    if (process_->detach()) std::fprintf(stderr, "Detached from process %d\n", static_cast<int>(process_->pid()));
  } else {
    (void)process_->kill();
  }
  process_.reset();
}

// The translating tracer by default, which runs the program's code in a
// cache and stops only where it cannot (0.004 stops per taken branch on
// record_bench's workload), over int3 trace stops where it falls back:
// int3s, even where debug registers trap, because only they let the tracer
// run past transfers (lookahead: 0.48 stops per taken branch against the
// debug register's 1.48, docs/performance.md). All four debug registers
// then stay for the client's Z1-Z4.
Expected<std::unique_ptr<SoftwareTracer>> Server::make_software_tracer() const {
  TraceStops stops = TraceStops::Breakpoint;
  switch (command_line_.trace_stops) {
    case TraceStopChoice::Int3: break;
    case TraceStopChoice::Translate: break;  // int3s where it falls back
    case TraceStopChoice::DebugRegister:
      if (!PtraceProcess::debug_registers_work()) {
        return btstub::make_error(btstub::ErrorCode::NotSupported,
                                  "--trace-stops=debugreg: debug registers do not trap on this machine");
      }
      stops = TraceStops::DebugRegister;
      break;
    case TraceStopChoice::SingleStep: stops = TraceStops::SingleStep; break;
  }
  tracing::TraceConfig config = command_line_.trace_config;
  // The software tracer's store grows with what is recorded
  // (decoder/block_trace.h), so its default can be a long history; a
  // hardware buffer is allocated whole, so those keep gdb's 64k.
  if (!command_line_.trace_size_given) config.buffer_bytes = tracing::kSoftwareTraceDefaultSize;
  auto tracer = SoftwareTracer::create(config, command_line_.record, stops);
  if (!tracer) return tracer.error();
  std::optional<tracing::CheckpointLimits> limits;
  if (command_line_.checkpoint_memory > 0) {
    limits.emplace();
    limits->memory_bytes = command_line_.checkpoint_memory;
    limits->every_branches = command_line_.checkpoint_spacing();
    limits->fill_in_branches = command_line_.checkpoint_fill_in();
    if (command_line_.checkpoint_every) limits->history_share = 0;  // the user's spacing, fixed
  }
  (*tracer)->set_checkpoint_limits(limits);
  (*tracer)->set_packer_placement(packer_placement(pinned_cpu_, spare_cpus_, std::thread::hardware_concurrency()));
  return tracer;
}

int Server::run() {
  std::signal(SIGPIPE, SIG_IGN);  // a vanished client is a read/write error, not a death
  if (command_line_.pin_cpu) {
    // Programs started later inherit the binding (see cpu_affinity.h).
    if (auto pinned = pin_to_quiet_cpu(); !pinned) {
      std::fprintf(stderr, "btstub: warning: %s; running unpinned\n", pinned.error().message.c_str());
    } else {
      pinned_cpu_ = pinned->cpu;
      spare_cpus_ = std::move(pinned->others);
    }
  }
  auto choice = command_line_.trace_backend;
  if (choice == TraceBackendChoice::PerfBts || choice == TraceBackendChoice::IntelBts ||
      choice == TraceBackendChoice::IntelPt) {
    perf_seam_ = make_linux_perf_seam();
    PerfBackend::Options options;
    options.kind = choice == TraceBackendChoice::IntelPt    ? HardwareTrace::IntelPt
                   : choice == TraceBackendChoice::IntelBts ? HardwareTrace::IntelBts
                                                            : HardwareTrace::PerfBts;
    options.intel_bts_type = intel_bts_pmu_type(*perf_seam_).value_or(0);
    options.intel_pt_type = intel_pt_pmu_type(*perf_seam_).value_or(0);
    options.config = command_line_.trace_config;
    options.enable_all = command_line_.record;
    hardware_ = std::make_unique<PerfBackend>(*perf_seam_, options);
    return command_line_.stdio() ? serve_stdio() : serve_tcp();
  }
  auto tracer = make_software_tracer();
  if (!tracer && command_line_.trace_stops_given) {
    std::fprintf(stderr, "btstub: %s\n", tracer.error().message.c_str());  // asked for by name
    return 1;
  }
  if (!tracer) {
    std::fprintf(stderr, "btstub: branch tracing unavailable: %s\n", tracer.error().message.c_str());
  } else if (command_line_.trace_stops == TraceStopChoice::Translate) {
    auto translator = tracing::TranslatingTracer::create(std::move(*tracer));
    if (!translator) {
      std::fprintf(stderr, "btstub: %s\n", translator.error().message.c_str());
      return 1;
    }
    translator_ = std::move(*translator);
  } else {
    tracer_ = std::move(*tracer);
  }
  return command_line_.stdio() ? serve_stdio() : serve_tcp();
}

namespace {

// The host's first address, or getaddrinfo's reason (gai_strerror, the
// text gdbserver prints) why there is none.
Expected<asio::ip::address> resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return btstub::make_error(btstub::ErrorCode::InvalidArgument, ::gai_strerror(rc));
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = found->ai_family == AF_INET6
                        ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr)
                        : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr);
  const bool ok = ::inet_ntop(found->ai_family, raw, text, sizeof text) != nullptr;
  ::freeaddrinfo(found);
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(text, ec);
  if (!ok || ec) return btstub::make_error(btstub::ErrorCode::InvalidArgument, "unusable address");
  return ip;
}

// Asio opens and accepts sockets without close-on-exec: every program
// btstub starts would inherit the listener (and answer connections on it
// after --once closed ours) and the client's connection.
void set_cloexec(int fd) { (void)::fcntl(fd, F_SETFD, FD_CLOEXEC); }

// `handover`: what the previous client left with the program kept for this
// one (taken here), and on return what this client leaves (nullopt when the
// program is not to be kept: gone, or running).
template <class In, class Out>
ConnectionResult serve(asio::io_context& io, In& in, Out& out, Process* process, ProcessFactory* factory,
                       TraceBackend* trace_backend, ChildSignals& sigchld, TerminationSignals& terminate,
                       const CommandLine& cl, std::optional<SessionHandover>& handover) {
  SessionConfig config;
  config.disabled_packets = cl.disabled_packets;
  config.step_ahead = cl.step_ahead;
  // The empty reply, not an error: gdb then reads files locally instead.
  if (cl.no_vfile) config.disabled_packets.insert("vFile");
  Session session(config, process);
  session.process_factory = factory;
  session.trace_backend = trace_backend;
  if (handover) session.take_over(*handover);
  Connection<In, Out> connection(io, in, out, session, sigchld, terminate, cl.remote_debug,
                                 std::chrono::microseconds(cl.busy_poll_us),
                                 std::chrono::seconds(cl.replay_progress_seconds));
  ConnectionResult result = connection.run();
  handover = session.handover();
  return result;
}

}  // namespace

int Server::serve_stdio() {
  if (starts_with_program()) {
    auto process = start_program();
    if (!process) {
      std::fprintf(stderr, "%s\nExiting\n", process.error().message.c_str());
      return 1;
    }
    process_ = std::move(*process);
  }
  asio::io_context io;
  ChildSignals sigchld(io);
  TerminationSignals terminate(io);
  asio::posix::stream_descriptor in(io, ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0));
  asio::posix::stream_descriptor out(io, ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0));
  std::fprintf(stderr, "Remote debugging using stdio\n");
  std::optional<SessionHandover> handover;
  serve(io, in, out, process_.get(), this, trace_backend(), sigchld, terminate, command_line_, handover);
  return end_on_signal(terminate.received());
}

int Server::end_on_signal(int signal) {
  release_program();
  ended_by_ = signal;
  return 0;
}

int Server::serve_tcp() {
  auto address = parse_listen_address(command_line_.comm);
  if (!address) {
    std::fprintf(stderr, "%s\n", address.error().message.c_str());
    return 1;
  }
  asio::io_context io;
  ChildSignals sigchld(io);
  TerminationSignals terminate(io);
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(address->host, ec);
  if (ec) {
    auto resolved = resolve_host(address->host);
    if (!resolved) {
      // gdbserver's words: gdb's testsuite waits for them (gdbserver-support.exp).
      std::fprintf(stderr, "%s: cannot resolve name: %s\nExiting\n", command_line_.comm.c_str(),
                   resolved.error().message.c_str());
      return 1;
    }
    ip = *resolved;
  }
  tcp::acceptor acceptor(io);
  tcp::endpoint endpoint(ip, address->port);
  if (!acceptor.open(endpoint.protocol(), ec)) set_cloexec(acceptor.native_handle());
  if (ec || acceptor.set_option(tcp::acceptor::reuse_address(true), ec) ||
      acceptor.bind(endpoint, ec) || acceptor.listen(1, ec)) {
    std::fprintf(stderr, "Can't bind address: %s.\nExiting\n",
                 ec == asio::error::address_in_use ? "Address already in use" : ec.message().c_str());
    return 1;
  }

  if (starts_with_program()) {
    auto process = start_program();
    if (!process) {
      std::fprintf(stderr, "%s\nExiting\n", process.error().message.c_str());
      return 1;
    }
    process_ = std::move(*process);
  }
  if (!ip.is_loopback()) {
    std::fprintf(stderr,
                 "btstub: warning: listening on %s, not on a loopback address: anyone who can reach "
                 "port %u controls the program and can read files with btstub's rights (see "
                 "--no-vfile, --no-run and docs/security.md)\n",
                 ip.to_string().c_str(), static_cast<unsigned>(acceptor.local_endpoint().port()));
  }
  std::fprintf(stderr, "Listening on port %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));

  std::optional<SessionHandover> handover;  // from the previous client, for a kept program
  for (;;) {
    tcp::socket socket(io);
    // Waiting for a client, a termination signal ends the wait: the
    // program goes as after a client (detached or killed).
    acceptor.async_accept(socket, [&](const boost::system::error_code& accepted) {
      ec = accepted;
      terminate.cancel();
    });
    terminate.async_wait([&] {
      boost::system::error_code ignored;
      acceptor.cancel(ignored);
    });
    io.run();
    io.restart();
    if (terminate.received() != 0) return end_on_signal(terminate.received());
    if (ec) {
      std::fprintf(stderr, "Accept failed: %s\n", ec.message().c_str());
      release_program();
      return 1;
    }
    set_cloexec(socket.native_handle());
    // --once: nobody else may connect, not even while this client is served.
    if (command_line_.once) acceptor.close(ec);
    auto peer = socket.remote_endpoint(ec);
    std::fprintf(stderr, "Remote debugging from host %s, port %u\n", peer.address().to_string().c_str(),
                 static_cast<unsigned>(peer.port()));
    socket.set_option(tcp::no_delay(true), ec);
    ConnectionResult result = serve(io, socket, socket, process_.get(), this, trace_backend(), sigchld, terminate,
                                    command_line_, handover);
    if (terminate.received() != 0) return end_on_signal(terminate.received());
    if (handover && !result.exit_server && !command_line_.once && process_ && !process_->attached()) {
      // The client went away (gdb's `disconnect`) leaving the program it
      // launched stopped: the next client gets it as it is, as from
      // gdbserver. (A program attached to is still let go: detached, it
      // runs on as its owner expects; see docs/reliability.md.)
      std::fprintf(stderr, "Remote side has terminated connection.  btstub will reopen the connection.\n");
      std::fprintf(stderr, "Listening on port %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
      continue;
    }
    handover.reset();
    release_program();
    if (result.exit_server || command_line_.once || command_line_.mode == CommandLine::Mode::Attach) break;
    // Without --once, a client that killed the program (or left it
    // running) is followed by one with a fresh copy of the program; in
    // --multi mode it starts with none, as gdbserver does.
    if (command_line_.mode == CommandLine::Mode::Multi) {
      std::fprintf(stderr, "Listening on port %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
      continue;
    }
    auto next = start_program();
    if (!next) {
      std::fprintf(stderr, "%s\nExiting\n", next.error().message.c_str());
      return 1;
    }
    process_ = std::move(*next);
    std::fprintf(stderr, "Listening on port %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  }
  return 0;
}

}  // namespace stub::server
