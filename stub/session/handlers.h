#pragma once
// One handler per request type. Session::handle visits the request variant
// and overload resolution picks the handler: the variant's type list is the
// dispatch table. Handlers live in one file per packet family:
//   handlers_query.cc     qSupported, qC, qAttached, thread queries, H, T, ?
//   handlers_state.cc     registers and memory
//   handlers_exec.cc      resume (c/s/vCont/bs/bc), breakpoints, k, D, signals
//   handlers_xfer.cc      qXfer objects
//   handlers_file.cc      vFile
//   handlers_monitor.cc   qRcmd (monitor commands)
//   handlers_extended.cc  !, vRun, vAttach, R, QThreadEvents
//   handlers_btrace.cc    Qbtrace, Qbtrace-conf, qXfer:btrace(-conf)
//   handlers_replay.cc    bs, bc, and forward resumes through the recorded past
//   handlers_thread_db.cc qSymbol, qGetTLSAddr (libthread_db)
//   handlers_non_stop.cc  QNonStop, vStopped, vCtrlC; `?` and resumes in non-stop mode
//   handlers_lldb.cc      LLDB's own: qHostInfo, qProcessInfo, qThreadStopInfo,
//                         jThreadsInfo, qMemoryRegionInfo, x, _M/_m, ...
#include "protocol/replies.h"
#include "protocol/requests.h"
#include "protocol/rsp_link.h"
#include "stub/session/session.h"

namespace stub::session {

using namespace protocol;

// A handler's error reply: "E." and the message, which gdb prints.
inline Reply error(const btstub::Error& e) { return Reply::now(reply_error(e)); }
inline Reply error(btstub::ErrorCode code, std::string message) {
  return error(btstub::make_error(code, std::move(message)));
}
// gdb's memory packets expect a numeric error; E.text would be read as data.
inline constexpr uint8_t kMemoryErrorCode = 0x01;

// handlers_query.cc
Reply handle(Session&, const QSupported&);
Reply handle(Session&, const QStartNoAckMode&);
Reply handle(Session&, const QueryAttached&);
Reply handle(Session&, const QueryCurrentThread&);
Reply handle(Session&, const QueryThreadInfoFirst&);
Reply handle(Session&, const QueryThreadInfoNext&);
Reply handle(Session&, const QueryStopReason&);
Reply handle(Session&, const SetThread&);
Reply handle(Session&, const ThreadAlive&);
Reply handle(Session&, const MustReplyEmpty&);
Reply handle(Session&, const QueryVContSupported&);
Reply handle(Session&, const UnknownPacket&);

// handlers_state.cc
Reply handle(Session&, const ReadAllRegisters&);
Reply handle(Session&, const WriteAllRegisters&);
Reply handle(Session&, const ReadRegister&);
Reply handle(Session&, const WriteRegister&);
Reply handle(Session&, const ReadMemory&);
Reply handle(Session&, const WriteMemory&);
// m and x: the current thread's bytes (its past while it replays), at most
// what fits in one reply as hex.
Expected<std::vector<uint8_t>> read_client_memory(Session&, uint64_t addr, uint64_t length);
// G, P and `c ADDR`: writes `regs` as the thread's registers, which were
// `before`; the tracer hears where the thread stood (it stores a move of
// the pc as a transfer).
Expected<void> write_client_registers(Session&, pid_t tid, const protocol::RegisterFile& before,
                                      const protocol::RegisterFile& regs);

// handlers_exec.cc
Reply handle(Session&, const InsertBreakpoint&);
Reply handle(Session&, const RemoveBreakpoint&);
Reply handle(Session&, const Resume&);
Reply handle(Session&, const Kill&);
Reply handle(Session&, const Detach&);
Reply handle(Session&, const SetPassSignals&);
Reply handle(Session&, const SetProgramSignals&);
Reply handle(Session&, const SetCatchSyscalls&);
// The action of a resume that applies to `tid` of process `pid`: the
// leftmost one naming it (or its process, or every thread), as vCont
// defines; nullptr when none does.
const ThreadAction* action_for(const Resume& req, pid_t pid, pid_t tid);
// The thread and host signal of the last stop when a signal stopped it
// (not yet given to the program: the next resume gives it); else nullopt.
std::optional<std::pair<pid_t, int>> last_stop_signal(const Session&);

// handlers_xfer.cc
Reply handle(Session&, const XferRead&);
Reply handle(Session&, const XferWrite&);

// handlers_file.cc
Reply handle(Session&, const FileOpen&);
Reply handle(Session&, const FileClose&);
Reply handle(Session&, const FilePread&);
Reply handle(Session&, const FilePwrite&);
Reply handle(Session&, const FileFstat&);
Reply handle(Session&, const FileSetFs&);
Reply handle(Session&, const FileReadlink&);
Reply handle(Session&, const FileUnlink&);

// handlers_monitor.cc
Reply handle(Session&, const MonitorCommand&);
// A qRcmd that does not parse: its message as console output, then E01
// (an E.text would reach gdb as "Invalid hex digit").
Reply monitor_failure(const std::string& message);

// handlers_extended.cc
Reply handle(Session&, const ExtendedMode&);
Reply handle(Session&, const RunProgram&);
Reply handle(Session&, const AttachProcess&);
Reply handle(Session&, const Restart&);
Reply handle(Session&, const SetThreadEvents&);
Reply handle(Session&, const EnvironmentSet&);
Reply handle(Session&, const EnvironmentUnset&);
Reply handle(Session&, const EnvironmentReset&);
Reply handle(Session&, const SetWorkingDir&);
Reply handle(Session&, const SetDisableRandomization&);

// handlers_btrace.cc (gdb's `record btrace`)
Reply handle(Session&, const BtraceControl&);
Reply handle(Session&, const BtraceConfigure&);
// qXfer:btrace:read and qXfer:btrace-conf:read (from handlers_xfer.cc).
Reply handle_btrace_xfer(Session&, const XferRead&);
// qSupported entries: none without a trace backend.
std::vector<std::string> btrace_supported_features(const Session&);
// The BTS buffer a Qbtrace-conf:bts:size wish gets, as gdbserver sizes it:
// a power-of-two number of pages, at least one.
uint64_t bts_buffer_bytes(uint64_t requested, std::size_t page_size);

// handlers_thread_db.cc
Reply handle(Session&, const SymbolsReady&);
Reply handle(Session&, const SymbolAnswer&);
Reply handle(Session&, const GetTlsAddress&);

// handlers_replay.cc (reverse execution from the recorded history)
// The reply when the resume is served from the history (bs/bc, or c/s/vCont
// for a thread in its past); nullopt when the program should run live (every
// thread has then left its past).
std::optional<Reply> replay_resume(Session&, const Resume&);
// An error while `tid` replays: the past cannot be changed.
Expected<void> check_writable(Session&, pid_t tid);
// `monitor replay status`.
std::string replay_status(Session&);

// handlers_non_stop.cc (gdb's non-stop mode)
Reply handle(Session&, const SetNonStop&);
Reply handle(Session&, const StopNotificationAck&);
Reply handle(Session&, const InterruptRequest&);
// `?` in non-stop mode: a stop for every stopped thread, queued; the reply
// is the first (OK when none), vStopped gets the others.
Reply non_stop_stop_reasons(Session&);
// c/s/vCont in non-stop mode: each thread as its action says, the others
// as they are; OK at once.
Reply non_stop_resume(Session&, const Resume&);

// handlers_lldb.cc (LLDB's packets)
Reply handle(Session&, const HostInfoQuery&);
Reply handle(Session&, const ProcessInfoQuery&);
Reply handle(Session&, const ThreadStopInfoQuery&);
Reply handle(Session&, const ThreadsInfoQuery&);
Reply handle(Session&, const MemoryRegionQuery&);
Reply handle(Session&, const WatchpointCountQuery&);
Reply handle(Session&, const EnableErrorStrings&);
Reply handle(Session&, const SharedLibraryInfoQuery&);
Reply handle(Session&, const ReadMemoryBinary&);
Reply handle(Session&, const AllocateMemory&);
Reply handle(Session&, const DeallocateMemory&);

// Shared reply for "there is no program to act on".
Reply no_process_reply();

}  // namespace stub::session
