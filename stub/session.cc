#include "stub/session.h"

#include <csignal>

#include "stub/handlers.h"

namespace stub {

Session::Session(SessionConfig config, Process* process)
    : config_(std::move(config)), process_(process) {}

Reply Session::handle(const protocol::Request& request) {
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
    case ProcessEvent::Kind::Stopped:
      break;
  }
  stop.kind = StopReply::Kind::Signal;
  stop.signal = protocol::host_signal_to_gdb(event.signal);
  stop.thread = thread_id(event.tid);
  if (event.software_breakpoint && client_features.swbreak) {
    stop.reason = protocol::StopReason::SoftwareBreakpoint;
  }
  // Expedite pc, sp and fp so gdb can show the stop without asking.
  if (auto regs = process_->read_registers(event.tid)) {
    for (auto reg : {protocol::Amd64Reg::rbp, protocol::Amd64Reg::rsp, protocol::Amd64Reg::rip}) {
      auto n = static_cast<unsigned>(reg);
      const uint8_t* p = regs->bytes(n);
      stop.expedited.emplace_back(n, std::vector<uint8_t>(p, p + protocol::amd64_register_size(n)));
    }
  }
  return stop;
}

std::optional<std::string> Session::on_process_event(const ProcessEvent& event) {
  if (!has_process()) return std::nullopt;
  if (event.kind == ProcessEvent::Kind::Stopped && event.signal != SIGTRAP &&
      pass_signals.count(event.signal) != 0 && running_) {
    // QPassSignals: deliver straight away without bothering gdb.
    if (process_->resume(event.tid, StepKind::Continue, event.signal)) return std::nullopt;
  }
  running_ = false;
  if (event.kind != ProcessEvent::Kind::Stopped) general_thread = 0;
  if (event.kind == ProcessEvent::Kind::Stopped) general_thread = event.tid;  // as gdbserver does
  last_stop = make_stop_reply(event);
  if (event.kind != ProcessEvent::Kind::Stopped) mark_process_gone();
  return stop_reply_payload(*last_stop);
}

void Session::on_interrupt() {
  if (running_ && has_process()) (void)process_->interrupt();
}

}  // namespace stub
