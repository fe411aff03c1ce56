#include "stub/session.h"

#include <csignal>

#include "stub/handlers.h"
#include "stub/replay_engine.h"
#include "stub/trace_backend.h"

namespace stub {

Session::Session(SessionConfig config, Process* process)
    : config_(std::move(config)), process_(process) {}

Session::~Session() = default;

Reply Session::handle(const protocol::Request& request) {
  // Qbtrace:off discards traces a replay cursor may stand in.
  if (std::holds_alternative<protocol::BtraceControl>(request)) go_live();
  return std::visit([this](const auto& typed) { return stub::handle(*this, typed); }, request);
}

Reply Session::handle_packet(std::string_view payload) {
  if (config_.disabled_packets.count(protocol::packet_name(payload)) != 0) {
    return Reply::now(protocol::reply_empty());
  }
  auto request = protocol::parse_request(payload);
  if (!request) return Reply::now(protocol::reply_error(request.error()));
  return handle(*request);
}

void Session::mark_process_gone() {
  process_gone_ = true;
  replay_.reset();
}

ReplayEngine* Session::replay() {
  if (!replay_ && trace_backend != nullptr && has_process()) {
    std::unique_ptr<MappingInfo> maps =
        replay_maps ? replay_maps(process_->pid()) : std::make_unique<ProcMaps>(process_->pid());
    replay_ = std::make_unique<ReplayEngine>(*process_, *trace_backend, std::move(maps));
  }
  return replay_.get();
}

bool Session::replaying(pid_t tid) const { return replay_ && replay_->replaying(tid); }

void Session::go_live() {
  if (replay_) replay_->go_live();
}

btstub::Error Session::fork_child_not_debugged() {
  return btstub::make_error(btstub::ErrorCode::NotSupported,
                            "btstub debugs one process at a time: a fork child is only held until "
                            "detached or followed (detach-on-fork off is not supported)");
}

Expected<void> Session::check_not_fork_child() const {
  if (!general_fork_child) return {};
  return fork_child_not_debugged();
}

Expected<protocol::RegisterFile> Session::thread_registers(pid_t tid) {
  if (!has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  if (auto refused = check_not_fork_child(); !refused) return refused.error();
  if (replaying(tid)) return replay_->registers(tid);
  return process_->read_registers(tid);
}

Expected<std::vector<uint8_t>> Session::thread_memory(pid_t tid, uint64_t addr, std::size_t len) {
  if (!has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  if (auto refused = check_not_fork_child(); !refused) return refused.error();
  if (replaying(tid)) return replay_->read_memory(tid, addr, len);
  return process_->read_memory(addr, len);
}

void Session::set_process(Process* process) {
  replay_.reset();
  btrace_reads = BtraceReads{};
  software_breakpoints.clear();
  hardware_breakpoints.clear();
  process_ = process;
  process_gone_ = false;
  running_ = false;
  last_stop.reset();
  general_thread = 0;
  continue_thread = 0;
  general_fork_child = false;
}

protocol::ThreadId Session::thread_id(pid_t tid) const {
  pid_t pid = process_ != nullptr ? process_->pid() : tid;
  return protocol::ThreadId{pid, tid};
}

pid_t Session::current_thread() const {
  if (process_ == nullptr) return 0;
  if (general_thread > 0) return general_thread;
  return process_->pid();
}

Expected<pid_t> Session::resolve_thread(const protocol::ThreadId& id) const {
  if (!has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  if (id.pid > 0 && id.pid != process_->pid()) {
    return btstub::make_error(btstub::ErrorCode::NoProcess, "No such process");
  }
  if (id.is_all() || id.is_any()) return pid_t{0};
  for (pid_t tid : process_->threads()) {
    if (tid == id.tid) return tid;
  }
  return btstub::make_error(btstub::ErrorCode::NoProcess, "No such thread");
}

std::string Session::stop_reply_payload(const protocol::StopReply& stop) const {
  return protocol::reply_stop(stop, client_features.multiprocess);
}

protocol::StopReply Session::make_stop_reply(const ProcessEvent& event) {
  using protocol::StopReply;
  StopReply stop;
  switch (event.kind) {
    case ProcessEvent::Kind::Exited:
      stop.kind = StopReply::Kind::Exited;
      stop.exit_code = event.exit_code;
      stop.process = process_->pid();
      return stop;
    case ProcessEvent::Kind::Killed:
      stop.kind = StopReply::Kind::Terminated;
      stop.signal = protocol::host_signal_to_gdb(event.signal);
      stop.process = process_->pid();
      return stop;
    case ProcessEvent::Kind::ThreadExited:
      stop.kind = StopReply::Kind::ThreadExited;
      stop.exit_code = event.exit_code;
      stop.thread = thread_id(event.tid);
      return stop;
    case ProcessEvent::Kind::Stopped:
      break;
  }
  stop.kind = StopReply::Kind::Signal;
  stop.signal = protocol::host_signal_to_gdb(event.signal);
  stop.thread = thread_id(event.tid);
  if (event.software_breakpoint && client_features.swbreak) {
    stop.reason = protocol::StopReason::SoftwareBreakpoint;
  }
  if (event.hw_stop) set_hardware_reason(stop, *event.hw_stop, event.hw_address);
  if (event.fork_child != 0) {
    stop.reason = event.vfork ? protocol::StopReason::Vfork : protocol::StopReason::Fork;
    stop.child = protocol::ThreadId{event.fork_child, event.fork_child};
  }
  if (event.vfork_done) stop.reason = protocol::StopReason::VforkDone;
  if (event.exec_path && client_features.exec_events) {
    stop.reason = protocol::StopReason::Exec;
    stop.exec_path = *event.exec_path;
  }
  // Expedite pc, sp and fp so gdb can show the stop without asking.
  if (auto regs = process_->read_general_registers(event.tid)) {
    for (auto reg : {protocol::Amd64Reg::rbp, protocol::Amd64Reg::rsp, protocol::Amd64Reg::rip}) {
      auto n = static_cast<unsigned>(reg);
      const uint8_t* p = regs->bytes(n);
      stop.expedited.emplace_back(n, std::vector<uint8_t>(p, p + protocol::amd64_register_size(n)));
    }
  }
  return stop;
}

// Watchpoints always say which address triggered (gdb needs it to check
// the value); a hardware breakpoint only to a client that asked (hwbreak+).
void Session::set_hardware_reason(protocol::StopReply& stop, protocol::BreakpointType type,
                                  uint64_t address) const {
  using protocol::BreakpointType;
  using protocol::StopReason;
  stop.reason_addr = address;
  switch (type) {
    case BreakpointType::Hardware:
      if (client_features.hwbreak) stop.reason = StopReason::HardwareBreakpoint;
      break;
    case BreakpointType::WriteWatch: stop.reason = StopReason::Watch; break;
    case BreakpointType::ReadWatch: stop.reason = StopReason::ReadWatch; break;
    case BreakpointType::AccessWatch: stop.reason = StopReason::AccessWatch; break;
    case BreakpointType::Software: break;
  }
}

std::optional<std::string> Session::on_process_event(const ProcessEvent& event) {
  if (!has_process()) return std::nullopt;
  if (event.kind == ProcessEvent::Kind::Stopped && event.signal != SIGTRAP &&
      pass_signals.count(event.signal) != 0 && running_) {
    // QPassSignals: deliver straight away without bothering gdb.
    if (process_->resume(event.tid, StepKind::Continue, event.signal)) return std::nullopt;
  }
  running_ = false;
  bool process_ended = event.kind == ProcessEvent::Kind::Exited || event.kind == ProcessEvent::Kind::Killed;
  if (process_ended) general_thread = 0;
  if (event.kind == ProcessEvent::Kind::Stopped) general_thread = event.tid;  // as gdbserver does
  last_stop = make_stop_reply(event);
  if (process_ended) mark_process_gone();
  return stop_reply_payload(*last_stop);
}

void Session::on_interrupt() {
  if (running_ && has_process()) (void)process_->interrupt();
}

}  // namespace stub
