// Extended-remote requests (!, vRun, vAttach, R) and QThreadEvents.
// The session starts and attaches to programs through its ProcessFactory
// (the server); without one (a session built for tests of other packets)
// these requests answer with an error and nothing else changes.
#include <csignal>

#include "stub/session/handlers.h"

namespace stub::session {

namespace {

// Outside extended mode gdb may still run or attach when nothing is being
// debugged (gdbserver allows it too); with a live program it must not. In
// extended mode neither: btstub debugs one program at a time, and gdb
// kills or detaches the one it has before a plain `run` or `attach`. A
// vRun or vAttach with a program still live comes from a second inferior
// (add-inferior), and starting it used to kill or detach the first one
// behind gdb's back: gdb still held it, and its next `continue` repeated
// "No thread to resume" without end.
std::optional<Reply> refuse_start(Session& s, const char* what) {
  if (s.process_factory == nullptr) {
    return error(btstub::ErrorCode::NotSupported, std::string(what) + " is not available on this connection");
  }
  if (auto allowed = s.process_factory->may_start_programs(); !allowed) {
    return error(allowed.error());
  }
  if (s.has_process() && !s.extended) {
    return error(btstub::ErrorCode::InvalidArgument, "Already debugging a process");
  }
  if (s.has_process()) {
    return error(btstub::ErrorCode::InvalidArgument,
                 "Already debugging process " + std::to_string(s.inferiors().first()->pid()) +
                     ": btstub debugs one program at a time (kill or detach it first)");
  }
  return std::nullopt;
}

// A fresh program sits at its first instruction (launch) or wherever it was
// (attach); either way gdb expects a plain SIGTRAP stop, as gdbserver reports.
Reply initial_stop(Session& s, Process* process) {
  s.set_process(process);
  if (s.caught_syscalls) (void)process->set_syscall_catch(s.caught_syscalls);
  process->set_thread_events(s.thread_events);
  process->set_fork_events(s.client_features.fork_events, s.client_features.vfork_events);
  ProcessEvent event;
  event.tid = process->pid();
  event.signal = SIGTRAP;
  s.last_stop = s.make_stop_reply(event);
  if (s.non_stop) s.thread_stops[event.tid] = *s.last_stop;
  return Reply::now(s.stop_reply_payload(*s.last_stop));
}

Expected<Process*> launch(Session& s, std::vector<std::string> argv) {
  if (argv.empty()) argv.emplace_back();
  if (argv[0].empty()) {
    argv[0] = s.last_run_argv.empty() ? s.process_factory->default_program() : s.last_run_argv[0];
  }
  if (argv[0].empty()) {
    return btstub::make_error(btstub::ErrorCode::InvalidArgument,
                              "No program to run; give one with 'set remote exec-file'");
  }
  s.set_process(nullptr);  // the factory releases the previous program
  auto process = s.process_factory->launch(argv, s.run_settings);
  if (process) s.last_run_argv = std::move(argv);
  return process;
}

}  // namespace

Reply handle(Session& s, const ExtendedMode&) {
  s.extended = true;
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const RunProgram& req) {
  if (auto refused = refuse_start(s, "vRun")) return *refused;
  auto process = launch(s, req.argv);
  if (!process) return error(process.error());
  return initial_stop(s, *process);
}

Reply handle(Session& s, const AttachProcess& req) {
  if (auto refused = refuse_start(s, "vAttach")) return *refused;
  if (req.pid <= 0 || req.pid > 0x3fffffff) {
    return error(btstub::ErrorCode::InvalidArgument, "Invalid process id " + std::to_string(req.pid));
  }
  s.set_process(nullptr);
  auto process = s.process_factory->attach(static_cast<pid_t>(req.pid));
  if (!process) return error(process.error());
  if (s.non_stop) {
    // As gdbserver: no stop reply; gdb stops each thread (vCont;t) and
    // hears of it by notification (non_stop_resume).
    (void)initial_stop(s, *process);
    s.thread_stops.clear();
    s.last_stop.reset();
    return Reply::now(reply_ok());
  }
  return initial_stop(s, *process);
}

// R has no reply: gdb asks `?` next and gets the new program's first stop.
Reply handle(Session& s, const Restart&) {
  // Outside extended mode R is not a packet btstub knows (gdbserver too
  // answers it empty); silence would leave the client waiting forever.
  if (!s.extended) return Reply::now(reply_empty());
  Reply reply;  // no payload: nothing is sent
  if (s.process_factory == nullptr || !s.process_factory->may_start_programs()) return reply;
  auto process = launch(s, s.last_run_argv);
  if (process) (void)initial_stop(s, *process);
  return reply;
}

// The run settings apply to the next vRun (and R), as gdbserver's: gdb
// sends them all again (QEnvironmentReset first) before each `run`.
Reply handle(Session& s, const EnvironmentSet& req) {
  s.run_settings.environment.emplace_back(req.name, req.value);
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const EnvironmentUnset& req) {
  s.run_settings.environment.emplace_back(req.name, std::nullopt);
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const EnvironmentReset&) {
  s.run_settings.environment.clear();
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const SetWorkingDir& req) {
  s.run_settings.working_dir = req.dir;
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const SetDisableRandomization& req) {
  s.run_settings.disable_randomization = req.disable;
  return Reply::now(reply_ok());
}

// gdb asks for thread exits only while it stops threads itself (non-stop
// style), but honouring it costs nothing: exits then become `w` replies.
Reply handle(Session& s, const SetThreadEvents& req) {
  s.thread_events = req.enable;
  for (Process* process : s.inferiors().live()) process->set_thread_events(req.enable);
  return Reply::now(reply_ok());
}

}  // namespace stub::session
