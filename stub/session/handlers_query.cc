// Session-level queries: capabilities, threads, the last stop.
#include <algorithm>
#include <csignal>

#include "protocol/rsp_link.h"
#include "stub/session/handlers.h"

namespace stub::session {

Reply no_process_reply() {
  return error(btstub::ErrorCode::NoProcess, "No process");
}

Reply handle(Session& s, const QSupported& req) {
  auto offered = [&](std::string_view name) {
    return std::find(req.client_features.begin(), req.client_features.end(), name) !=
           req.client_features.end();
  };
  s.client_features.multiprocess = offered("multiprocess+");
  s.client_features.swbreak = offered("swbreak+");
  s.client_features.hwbreak = offered("hwbreak+");
  s.client_features.exec_events = offered("exec-events+");
  s.client_features.fork_events = offered("fork-events+");
  s.client_features.vfork_events = offered("vfork-events+");
  s.client_features.no_resumed = offered("no-resumed+");
  for (Process* process : s.inferiors().live()) {
    process->set_fork_events(s.client_features.fork_events, s.client_features.vfork_events);
  }

  char packet_size[32];
  std::snprintf(packet_size, sizeof packet_size, "PacketSize=%zx", RspLink::kMaxPayload);
  std::vector<std::string> features = {
      packet_size,
      "QPassSignals+",
      "QProgramSignals+",
      "QCatchSyscalls+",
      "QStartNoAckMode+",
      "QThreadEvents+",
      "QNonStop+",
      "QEnvironmentHexEncoded+",
      "QEnvironmentUnset+",
      "QEnvironmentReset+",
      "QSetWorkingDir+",
      "QDisableRandomization+",
      "qXfer:features:read+",
      "qXfer:auxv:read+",
      "qXfer:exec-file:read+",
      "qXfer:libraries-svr4:read+",
      "qXfer:threads:read+",
      "qXfer:siginfo:read+",
      "qXfer:siginfo:write+",
      "qXfer:osdata:read+",
      "vContSupported+",
  };
  if (s.client_features.multiprocess) features.emplace_back("multiprocess+");
  if (s.client_features.swbreak) features.emplace_back("swbreak+");
  if (s.client_features.hwbreak) features.emplace_back("hwbreak+");
  if (s.client_features.exec_events) features.emplace_back("exec-events+");
  if (s.client_features.fork_events) features.emplace_back("fork-events+");
  if (s.client_features.vfork_events) features.emplace_back("vfork-events+");
  for (auto& feature : btrace_supported_features(s)) features.push_back(std::move(feature));
  // Reverse execution is answered from the recorded branch trace.
  if (s.trace_backend != nullptr) {
    features.emplace_back("ReverseStep+");
    features.emplace_back("ReverseContinue+");
  }
  return Reply::now(reply_supported(features));
}

// The server switches the link after sending this reply (see Server).
Reply handle(Session&, const QStartNoAckMode&) { return Reply::now(reply_ok()); }

Reply handle(Session& s, const QueryAttached& req) {
  if (!s.has_process()) return no_process_reply();
  Process* process = req.pid ? s.inferiors().find(static_cast<pid_t>(*req.pid)) : s.process();
  if (process == nullptr) {  // as gdbserver: only ours are known
    return error(btstub::ErrorCode::NoProcess, "No such process");
  }
  return Reply::now(reply_attached(process->attached()));
}

Reply handle(Session& s, const QueryCurrentThread&) {
  if (!s.has_process()) return no_process_reply();
  return Reply::now(reply_current_thread(s.thread_id(s.current_thread()), s.client_features.multiprocess));
}

Reply handle(Session& s, const QueryThreadInfoFirst&) {
  std::vector<ThreadId> ids;
  for (Process* process : s.inferiors().live()) {
    for (pid_t tid : process->threads()) ids.push_back(protocol::ThreadId{process->pid(), tid});
  }
  return Reply::now(reply_thread_list(ids, s.client_features.multiprocess));
}

Reply handle(Session& s, const QueryThreadInfoNext&) {
  return Reply::now(reply_thread_list({}, s.client_features.multiprocess));
}

Reply handle(Session& s, const QueryStopReason&) {
  if (s.non_stop) return non_stop_stop_reasons(s);
  if (s.last_stop) return Reply::now(s.stop_reply_payload(*s.last_stop));
  if (!s.has_process()) return Reply::now("W00");
  // Freshly launched or attached: stopped by SIGTRAP (launch) or SIGSTOP (attach),
  // which gdb expects to see as a plain trap (gdbserver's T05) and LLDB as
  // lldb-server reports it (T13, SIGSTOP).
  ProcessEvent event;
  event.tid = s.current_thread();
  event.signal = s.lldb.client ? SIGSTOP : SIGTRAP;
  s.last_stop = s.make_stop_reply(event);
  return Reply::now(s.stop_reply_payload(*s.last_stop));
}

Reply handle(Session& s, const SetThread& req) {
  if (req.op == 'g') {
    // A held fork child: not debugged (yet), see Session::process().
    bool held = req.thread.pid > 0 && s.inferiors().holder_of_fork_child(static_cast<pid_t>(req.thread.pid));
    s.general_fork_child = held ? static_cast<pid_t>(req.thread.pid) : 0;
    if (held) {
      s.general_thread = s.general_fork_child;  // its only thread
      return Reply::now(reply_ok());
    }
  }
  auto tid = s.resolve_thread(req.thread);
  if (!tid) return error(tid.error());
  if (req.op == 'g') {
    // pPID.0 or pPID.-1: that process, by its main thread.
    s.general_thread = *tid == 0 && req.thread.pid > 0 ? static_cast<pid_t>(req.thread.pid) : *tid;
  } else {
    s.continue_thread = *tid;
    s.continue_process = *tid == 0 && req.thread.pid > 0 ? static_cast<pid_t>(req.thread.pid) : 0;
  }
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const ThreadAlive& req) {
  auto tid = s.resolve_thread(req.thread);
  if (!tid || *tid == 0) return Reply::now(reply_error_code(1));
  return Reply::now(reply_ok());
}

Reply handle(Session&, const MustReplyEmpty&) { return Reply::now(reply_empty()); }

Reply handle(Session&, const QueryVContSupported&) {
  return Reply::now(reply_vcont_supported(";c;C;s;S;t"));
}

Reply handle(Session&, const UnknownPacket&) { return Reply::now(reply_empty()); }

}  // namespace stub::session
