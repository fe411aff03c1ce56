#include "stub/session/session.h"

#include <algorithm>
#include <csignal>

#include "stub/session/handlers.h"
#include "stub/process/xsave_layout.h"
#include "stub/replay/replay_engine.h"
#include "stub/tracing/checkpoints.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

using process::StepKind;
using replay::ProcMaps;

Session::Session(SessionConfig config, Process* process)
    : config_(std::move(config)), program_(process) {
  inferiors_.reset(process);
}

// Whoever sees the program next (another client, or nobody once it is
// detached) finds it where this client last saw it stop.
Session::~Session() {
  if (Process* owner = program()) step_ahead.undo(*owner);
  // A program kept for the next client is kept in all-stop mode, in which
  // every client starts (one left running is not kept: handover()).
  if (non_stop && !running()) {
    for (Process* process : inferiors_.live()) (void)process->set_non_stop(false);
  }
}

std::optional<SessionHandover> Session::handover() const {
  if (program() == nullptr || running()) return std::nullopt;
  SessionHandover handover;
  handover.btrace_client_enabled = btrace_reads.client_enabled;
  if (last_stop && last_stop->kind == protocol::StopReply::Kind::Signal && last_stop->thread) {
    handover.thread = static_cast<pid_t>(last_stop->thread->tid);
    handover.signal = protocol::gdb_signal_to_host(last_stop->signal);
  }
  return handover;
}

// The stop is built anew from the live registers: the last client may have
// left a replayed (past) position or a fork report behind, neither of which
// this client has seen.
void Session::take_over(const SessionHandover& handover) {
  Process* kept = program();
  if (kept == nullptr) return;
  btrace_reads.client_enabled = handover.btrace_client_enabled;
  std::vector<pid_t> threads = kept->threads();
  if (std::find(threads.begin(), threads.end(), handover.thread) == threads.end()) return;
  ProcessEvent event;
  event.tid = handover.thread;
  event.signal = handover.signal;
  general_thread = handover.thread;
  last_stop = make_stop_reply(event);
}

Reply Session::handle(const protocol::Request& request) {
  run_ahead_due_ = false;
  if (step_ahead.active() && !leaves_step_ahead(request)) {
    if (Process* owner = program()) step_ahead.undo(*owner);
  }
  return std::visit([this](const auto& typed) { return stub::session::handle(*this, typed); }, request);
}

Reply Session::handle_packet(std::string_view payload) {
  // --disable-packet=T turns off T stop replies (stop_reply_payload), as in
  // gdbserver, not the T thread-alive packet.
  if (const std::string name = protocol::packet_name(payload); name != "T" && config_.disabled_packets.count(name) != 0) {
    return Reply::now(protocol::reply_empty());
  }
  auto request = protocol::parse_request(payload);
  Reply reply;
  if (!request) {
    // gdb reads a qRcmd's replies as console output and OK/Enn only.
    if (protocol::packet_name(payload) == "qRcmd") return monitor_failure(request.error().message);
    reply = Reply::now(protocol::reply_error(request.error()));
  } else {
    // The handlers report failures as values; an exception from a library
    // (std::bad_alloc, a throwing std:: call missed in review) still ends
    // as an E. reply with its text, never as a dead server.
    try {
      reply = handle(*request);
    } catch (const std::exception& e) {
      reply = Reply::now(protocol::reply_error(
          btstub::make_error(btstub::ErrorCode::Internal, std::string("internal error: ") + e.what())));
    }
  }
  if (lldb.error_strings && reply.payload) *reply.payload = protocol::lldb_error_strings(*reply.payload);
  return reply;
}

void Session::mark_process_gone() {
  thread_stops.clear();
  step_ahead.forget();
  thread_libraries.clear();
  inferiors_.reset(nullptr);
  interrupt_owed_ = false;
  replay_.reset();
  drop_checkpoints();
}

// The copies of a program that is gone (killed, detached, exited) are
// killed with it: no process of the program may outlive it.
void Session::drop_checkpoints() {
  if (trace_backend == nullptr) return;
  if (tracing::Checkpoints* checkpoints = trace_backend->checkpoints()) checkpoints->clear();
}

void Session::forget_process(Process* process) {
  // gdb's inferior for a fork child outlives the parent (detach-on-fork
  // off): a child still held becomes a process of its own before its
  // holder leaves, or nothing would ever resume, kill or detach it.
  if (pid_t child = process->fork_child(); child != 0) (void)adopt_fork_child(child);
  if (process == program()) {
    replay_.reset();
    step_ahead.forget();
    drop_checkpoints();
  }
  thread_libraries.erase(process->pid());
  inferiors_.remove(process);
  if (!has_process()) mark_process_gone();
}

Process* Session::program() const {
  auto& live = inferiors_.live();
  return std::find(live.begin(), live.end(), program_) != live.end() ? program_ : nullptr;
}

Process* Session::process() {
  if (!has_process()) return nullptr;
  if (general_fork_child != 0) {
    if (Process* adopted = adopt_fork_child(general_fork_child)) return adopted;
  }
  if (general_thread > 0 && inferiors_.live().size() > 1) {
    if (Process* owner = inferiors_.owner_of(general_thread)) return owner;
  }
  return inferiors_.first();
}

Process* Session::adopt_fork_child(pid_t child) {
  Process* holder = inferiors_.holder_of_fork_child(child);
  if (holder == nullptr) return nullptr;
  auto adopted = holder->adopt_fork_child();
  if (!adopted) return nullptr;
  Process* process = adopted->get();
  (void)process->set_non_stop(non_stop);
  process->set_pass_signals(pass_signals);
  if (caught_syscalls) (void)process->set_syscall_catch(caught_syscalls);  // gdb's catchpoints are its too
  process->set_thread_events(thread_events);
  process->set_fork_events(client_features.fork_events, client_features.vfork_events);
  inferiors_.add(std::move(*adopted));
  if (general_fork_child == child) {
    general_fork_child = 0;
    general_thread = child;
  }
  return process;
}

void Session::adopt_held_fork_children() {
  const std::vector<Process*> holders = inferiors_.live();
  for (Process* holder : holders) {
    if (pid_t child = holder->fork_child(); child != 0) (void)adopt_fork_child(child);
  }
}

ReplayEngine* Session::replay() {
  Process* traced = program();
  if (!replay_ && trace_backend != nullptr && traced != nullptr) {
    std::unique_ptr<MappingInfo> maps =
        replay_maps ? replay_maps(traced->pid()) : std::make_unique<ProcMaps>(traced->pid());
    replay_ = std::make_unique<ReplayEngine>(*traced, *trace_backend, std::move(maps));
  }
  return replay_.get();
}

bool Session::replaying(pid_t tid) const { return replay_ && replay_->replaying(tid); }

bool Session::any_replaying() const { return replay_ && replay_->any_replaying(); }

bool Session::records_a_thread() {
  if (trace_backend == nullptr) return false;
  // --record and monitor record start hold before the program exists too.
  if (trace_backend->all_enabled()) return true;
  Process* program = process();
  if (program == nullptr) return false;
  const std::vector<pid_t> tids = program->threads();
  return std::any_of(tids.begin(), tids.end(), [&](pid_t tid) { return trace_backend->enabled(tid); });
}

void Session::go_live() {
  if (replay_) replay_->go_live();
}

pid_t Session::within_continue_process(pid_t tid) const {
  if (continue_thread > 0 || continue_process <= 0) return tid;
  const Process* named = inferiors_.find(continue_process);
  if (named == nullptr) return tid;
  if (tid > 0 && inferiors_.owner_of(tid) == named) return tid;
  const pid_t last = last_stopped_thread();
  if (last != 0 && inferiors_.owner_of(last) == named) return last;
  return continue_process;
}

// The process `tid` is a thread of, else the selected one (process()):
// with a fork child kept (detach-on-fork off) the selected process may be
// the child while a stop reply describes a thread of the program, whose
// registers and memory then come from its past when it replays.
Process* Session::owner_or_selected(pid_t tid) {
  if (Process* owner = inferiors_.owner_of(tid)) return owner;
  return process();
}

Expected<protocol::RegisterFile> Session::thread_registers(pid_t tid) {
  Process* owner = owner_or_selected(tid);
  if (owner == nullptr) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  // Only the program has a past (a fork child's thread is never replaying).
  if (owner == program() && replaying(tid)) return replay_->registers(tid);
  return owner->read_registers(tid);
}

protocol::RegisterLayout Session::register_layout() {
  Process* owner = process();
  return protocol::RegisterLayout(owner != nullptr ? owner->register_features()
                                                   : process::features_of(process::host_xsave_layout().xcr0));
}

Expected<std::vector<uint8_t>> Session::thread_memory(pid_t tid, uint64_t addr, std::size_t len) {
  Process* owner = owner_or_selected(tid);
  if (owner == nullptr) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  if (owner == program() && replaying(tid)) return replay_->read_memory(tid, addr, len);
  auto bytes = owner->read_memory(addr, len);
  if (bytes && owner == program()) step_ahead.show_before(addr, *bytes);
  return bytes;
}

void Session::set_process(Process* process) {
  if (Process* owner = program()) step_ahead.undo(*owner);
  step_ahead.forget_program_state();
  replay_.reset();
  btrace_reads = BtraceReads{};
  software_breakpoints.clear();
  hardware_breakpoints.clear();
  thread_libraries.clear();
  program_ = process;
  inferiors_.reset(process);
  // vRun/vAttach in non-stop mode: the new program is debugged non-stop too.
  if (process != nullptr && non_stop) (void)process->set_non_stop(true);
  thread_stops.clear();
  running_ = false;
  last_stop.reset();
  owed_live_signals.clear();
  general_thread = 0;
  continue_thread = 0;
  continue_process = 0;
  general_fork_child = 0;
}

protocol::ThreadId Session::thread_id(pid_t tid) const {
  Process* owner = inferiors_.owner_of(tid);
  if (owner == nullptr) owner = inferiors_.first();
  pid_t pid = owner != nullptr ? owner->pid() : tid;
  return protocol::ThreadId{pid, tid};
}

pid_t Session::current_thread() const {
  if (!has_process()) return 0;
  if (general_thread > 0) return general_thread;
  return inferiors_.first()->pid();
}

Expected<pid_t> Session::resolve_thread(const protocol::ThreadId& id) const {
  if (!has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  std::vector<Process*> candidates = inferiors_.live();
  if (id.pid > 0) {
    Process* named = inferiors_.find(static_cast<pid_t>(id.pid));
    if (named == nullptr) return btstub::make_error(btstub::ErrorCode::NoProcess, "No such process");
    candidates = {named};
  }
  if (id.is_all() || id.is_any()) return pid_t{0};
  for (Process* candidate : candidates) {
    for (pid_t tid : candidate->threads()) {
      if (tid == id.tid) return tid;
    }
  }
  return btstub::make_error(btstub::ErrorCode::NoProcess, "No such thread");
}

// --disable-packet=Tthread and =T as gdbserver has them (gdbserver/
// remote-utils.cc prepare_resume_reply; they exist so that gdb's tests can
// see stop replies without a thread): no thread: field, or 'S' stop
// replies, the signal alone.
std::string Session::stop_reply_payload(const protocol::StopReply& stop) const {
  protocol::StopReply sent = stop;
  if (config_.disabled_packets.count("Tthread") != 0) sent.thread.reset();
  std::string out = protocol::reply_stop(sent, client_features.multiprocess);
  if (config_.disabled_packets.count("T") != 0 && out.size() >= 3 && out[0] == 'T') return "S" + out.substr(1, 2);
  return out;
}

// The process an event belongs to: the one ProcessGroup named, else the
// owner of its thread, else the first (events straight from one Process).
Process* Session::process_of_event(const ProcessEvent& event) const {
  if (event.pid > 0) {
    if (Process* named = inferiors_.find(event.pid)) return named;
  }
  if (Process* owner = inferiors_.owner_of(event.tid)) return owner;
  return inferiors_.first();
}

protocol::StopReply Session::make_stop_reply(const ProcessEvent& event) {
  using protocol::StopReply;
  StopReply stop;
  Process* process = process_of_event(event);
  if (process == nullptr) {
    stop.kind = StopReply::Kind::Exited;
    return stop;
  }
  const protocol::ThreadId thread{process->pid(), event.tid};
  switch (event.kind) {
    case ProcessEvent::Kind::Exited:
      stop.kind = StopReply::Kind::Exited;
      stop.exit_code = event.exit_code;
      stop.process = process->pid();
      return stop;
    case ProcessEvent::Kind::Killed:
      stop.kind = StopReply::Kind::Terminated;
      stop.signal = protocol::host_signal_to_gdb(event.signal);
      stop.process = process->pid();
      return stop;
    case ProcessEvent::Kind::ThreadExited:
      stop.kind = StopReply::Kind::ThreadExited;
      stop.exit_code = event.exit_code;
      stop.thread = thread;
      return stop;
    case ProcessEvent::Kind::NoResumed:
      stop.kind = StopReply::Kind::NoResumed;
      return stop;
    case ProcessEvent::Kind::Stopped:
      break;
  }
  stop.kind = StopReply::Kind::Signal;
  stop.signal = protocol::host_signal_to_gdb(event.signal);
  stop.thread = thread;
  if (event.software_breakpoint && client_features.swbreak) {
    stop.reason = protocol::StopReason::SoftwareBreakpoint;
  }
  if (event.hw_stop) set_hardware_reason(stop, *event.hw_stop, event.hw_address);
  if (event.fork_child != 0) {
    stop.reason = event.vfork ? protocol::StopReason::Vfork : protocol::StopReason::Fork;
    stop.child = protocol::ThreadId{event.fork_child, event.fork_child};
  }
  if (event.vfork_done) stop.reason = protocol::StopReason::VforkDone;
  if (event.syscall != ProcessEvent::SyscallStop::None) {
    stop.reason = event.syscall == ProcessEvent::SyscallStop::Entry ? protocol::StopReason::SyscallEntry
                                                                     : protocol::StopReason::SyscallReturn;
    stop.reason_addr = static_cast<uint64_t>(event.syscall_number);
  }
  // A new program: its glibc is another one, found anew by the next qSymbol.
  if (event.exec_path) {
    thread_libraries.erase(process->pid());
    process->set_pass_signals(signals_passed(*process));  // a new image: its threading library is found anew
  }
  if (event.exec_path && client_features.exec_events) {
    stop.reason = protocol::StopReason::Exec;
    stop.exec_path = *event.exec_path;
  }
  // Expedite pc, sp and fp so gdb can show the stop without asking.
  if (auto regs = process->read_general_registers(event.tid)) {
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
  Process* process = has_process() ? process_of_event(event) : nullptr;
  if (process == nullptr) return std::nullopt;
  if (non_stop) return on_non_stop_event(event, process);
  if (event.kind == ProcessEvent::Kind::Stopped && event.signal != SIGTRAP && !event.during_step &&
      signals_passed(*process).count(event.signal) != 0 && running_ && inferiors_.live().size() == 1) {
    // QPassSignals: deliver straight away without bothering gdb. (With
    // several processes the others were stopped for this event already,
    // so it is reported instead; the process layer passes them itself.
    // One a step met is the client's: it steps over the handler.)
    if (process->resume(event.tid, StepKind::Continue, event.signal)) return std::nullopt;
  }
  if (event.kind == ProcessEvent::Kind::NoResumed) {
    // A client that does not know `N` waits, as it would with gdbserver.
    if (!client_features.no_resumed) return std::nullopt;
    running_ = false;
    last_stop.reset();  // `?` then reports a thread stopped as it is
    return stop_reply_payload(make_stop_reply(event));
  }
  running_ = false;
  bool process_ended = event.kind == ProcessEvent::Kind::Exited || event.kind == ProcessEvent::Kind::Killed;
  if (process_ended) general_thread = 0;
  if (event.kind == ProcessEvent::Kind::Stopped) general_thread = event.tid;  // as gdbserver does
  last_stop = make_stop_reply(event);
  run_ahead_due_ = config_.step_ahead && !process_ended && process == program() && event.single_stepped &&
                   last_stop->kind == protocol::StopReply::Kind::Signal && event.signal == SIGTRAP &&
                   !event.software_breakpoint && !event.hw_stop && !event.exec_path && event.fork_child == 0 &&
                   !event.vfork_done;
  if (process_ended) forget_process(process);
  if (event.kind == ProcessEvent::Kind::Stopped && process == program()) sum_up_due_ = fill_in_due_ = true;
  return stop_reply_payload(*last_stop);
}

// Does ahead what the first read far back in a long history would do at
// once (ReplayEngine::sum_up_histories): in the client's idle time, not
// before the stop reply (summing up costs about 0.1-0.25 us a branch,
// more than recording it under the translating tracer: a long continue's
// reply waited seconds for it).
bool Session::wants_sum_up() const {
  return sum_up_due_ && !running_ && trace_backend != nullptr && has_process() && !any_replaying();
}

// Also while the client replays: a client that went back at once, and
// looks around there, gets its next steps back from the checkpoints filled
// in meanwhile. Not in non-stop, where other threads run meanwhile.
bool Session::wants_fill_in() const {
  if (!fill_in_due_ || non_stop || running_ || trace_backend == nullptr || !has_process()) {
    return false;
  }
  const tracing::Checkpoints* checkpoints = trace_backend->checkpoints();
  return checkpoints != nullptr && checkpoints->limits().fill_in_branches != 0;
}

bool Session::wants_idle_turn() const { return wants_sum_up() || wants_fill_in(); }

void Session::idle_turn() {
  if (wants_sum_up()) {
    // About a millisecond (a run is 4,096 blocks): what a packet arriving
    // meanwhile waits at most.
    constexpr std::size_t kRunsPerTurn = 2;
    sum_up(kRunsPerTurn);
    return;
  }
  // A fork and a re-run of up to Limits::fill_in_branches: 5-10 ms here
  // (the connection starts these only once the client has been quiet).
  ReplayEngine* engine = replay();
  if (engine == nullptr || !engine->fill_in_checkpoints()) fill_in_due_ = false;
}

void Session::sum_up(std::size_t most_runs) {
  std::set<pid_t> not_ours;
  for (const auto& entry : btrace_reads.client_enabled) not_ours.insert(entry.first);
  ReplayEngine* engine = replay();
  if (engine == nullptr || !engine->sum_up_histories(not_ours, most_runs)) sum_up_due_ = false;
}

void Session::end_idle() {
  if (replay_) replay_->drop_code_read();
}

// All that is left at once: the replay about to start reads far back.
void Session::sum_up_past() {
  if (!wants_sum_up()) return;
  sum_up(SIZE_MAX);
  end_idle();
}

// One SIGINT is enough: its stop stops every other process too. It goes
// to a process that runs (gdb may have resumed only the fork child).
void Session::on_interrupt() {
  if (!has_process()) return;
  if (!running()) {
    interrupt_owed_ = true;
    return;
  }
  Process* target = inferiors_.first();
  if (inferiors_.live().size() > 1) {
    for (Process* process : inferiors_.live()) {
      if (process->has_running_threads()) {
        target = process;
        break;
      }
    }
  }
  (void)target->interrupt();
}

void Session::deliver_owed_interrupt() {
  if (running() && std::exchange(interrupt_owed_, false)) on_interrupt();
}

}  // namespace stub::session
