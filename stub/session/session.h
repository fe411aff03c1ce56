#pragma once
// One debugging session: the state a connected client sees (selected
// threads, negotiated features, the last stop) over the program and the
// fork children debugged beside it (ProcessGroup). Requests go
// in as typed values; replies come out as payloads. No sockets here: the
// server (stub/server/server.h) moves bytes, the session decides what they mean.
#include <functional>
#include <csignal>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "decoder/bts_document.h"
#include "protocol/replies.h"
#include "protocol/requests.h"
#include "protocol/stop_notifications.h"
#include "stub/process/host_files.h"
#include "stub/process/process.h"
#include "stub/process/process_group.h"
#include "stub/session/btrace_pt_trace.h"
#include "stub/session/step_ahead.h"
#include "stub/session/thread_library.h"

namespace stub::tracing {
class TraceBackend;  // stub/tracing/trace_backend.h
}  // namespace stub::tracing
namespace stub::replay {
class ReplayEngine;  // stub/replay/replay_engine.h
class MappingInfo;   // stub/replay/replay_engine.h
}  // namespace stub::replay

namespace stub::session {

using btstub::Expected;
using process::HostFiles;
using process::ProcessGroup;
using tracing::TraceBackend;
using replay::MappingInfo;
using replay::ReplayEngine;

// What gdb set for the programs vRun starts (QEnvironment*,
// QSetWorkingDir, QDisableRandomization), as gdbserver keeps them: for
// every later run of the session.
struct RunSettings {
  // Changes to the environment btstub started with, in order: a value
  // sets the variable, nullopt unsets it (QEnvironmentReset clears them).
  std::vector<std::pair<std::string, std::optional<std::string>>> environment;
  std::string working_dir;                    // empty: btstub's own
  std::optional<bool> disable_randomization;  // nullopt: the command line's
};

// How an extended-remote session starts (vRun, R) or attaches to (vAttach)
// a program. The factory owns what it creates and releases the previous
// program first (a launched one is killed, an attached one detached), so
// the session drops its pointer before asking (see set_process).
class ProcessFactory {
 public:
  virtual ~ProcessFactory() = default;
  virtual Expected<Process*> launch(const std::vector<std::string>& argv, const RunSettings& settings) = 0;
  virtual Expected<Process*> attach(pid_t pid) = 0;
  // What an empty argv[0] in vRun means: the program named on the command line.
  virtual std::string default_program() const { return {}; }
  // Whether launch/attach may be asked at all (--no-run refuses); asked
  // before the session lets go of its current program.
  virtual Expected<void> may_start_programs() const { return {}; }
};

// What the command line fixed for every session.
struct SessionConfig {
  std::set<std::string> disabled_packets;  // --disable-packet=
  bool step_ahead = true;                  // --no-step-ahead clears (stub/session/step_ahead.h)
};

// What a client leaves to the next one when it goes away (gdb's
// `disconnect`, or a vanished gdb) while the program is stopped and still
// debugged: a server without --once then keeps the program for the next
// client, as gdbserver does, and that client finds it as it was. gdbserver
// answers its `?` with the thread that last reported a stop (and makes it
// the general thread), and its branch traces stay on: gdb's record-btrace
// keeps recording over a disconnect ("Do not stop recording" in gdb's
// record_btrace_target::disconnect) and asks for each thread's
// qXfer:btrace-conf on connect (remote_btrace_maybe_reopen).
struct SessionHandover {
  pid_t thread = 0;  // the thread of the last stop reply; 0: none
  int signal = 0;    // its host signal
  std::map<pid_t, protocol::BtraceFormat> btrace_client_enabled;  // Session::BtraceReads::client_enabled
};

// The outcome of one request.
struct Reply {
  std::optional<std::string> payload;  // nullopt: the program now runs; the stop reply comes later
  bool close_connection = false;       // after sending payload (kill, detach)
  bool exit_server = false;            // monitor exit
  std::string console;                 // text for gdb's console, sent as O packets first
  std::optional<bool> packet_log;      // monitor set debug/remote-debug: the connection's packet log on stderr
  std::optional<bool> packet_log_timestamps;  // monitor set debug-format: its lines begin with the time

  static Reply now(std::string p) {
    Reply r;
    r.payload = std::move(p);
    return r;
  }
  static Reply later() { return Reply{}; }
};

// A qXfer:btrace document as it is read: made whole (conf, an empty or
// error-free short answer), or written on demand from a thread's trace.
using BtraceDocument = std::variant<std::string, decoder::BtsDocument, PtDocument>;

class Session {
 public:
  Session(SessionConfig config, Process* process);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The program is still debugged and stopped: what the next client is to
  // find (nullopt otherwise). take_over() gives it to a new session of the
  // same program, before its first request.
  std::optional<SessionHandover> handover() const;
  void take_over(const SessionHandover& handover);

  Reply handle(const protocol::Request& request);
  // Handles a raw packet payload: parse, --disable-packet, dispatch.
  Reply handle_packet(std::string_view payload);

  // A process event while the program runs: the stop reply to send, or
  // nullopt when the event was absorbed (e.g. a passed signal).
  std::optional<std::string> on_process_event(const ProcessEvent& event);
  // Ctrl-C from the client (or vCtrlC). One that comes while the program
  // is stopped (gdb sends it whenever it believes the program runs, also
  // when the stop reply is already on its way) is owed to the next
  // resume, which stops with SIGINT: gdbserver queues a SIGINT in the
  // stopped process, and gdb, having sent its interrupt, waits for that
  // stop. A live resume delivers it once the program runs; a resume in
  // the past takes it and stops where the thread is.
  void on_interrupt();
  bool interrupt_owed() const { return interrupt_owed_; }
  bool take_owed_interrupt() { return std::exchange(interrupt_owed_, false); }
  void deliver_owed_interrupt();
  // Once the client has a stop reply for a single step: runs the next step
  // ahead (stub/session/step_ahead.h) when nothing else could see it early.
  void run_ahead();
  bool wants_run_ahead() const { return run_ahead_due_; }
  bool wants_sum_up() const;
  bool wants_fill_in() const;
  // After an all-stop stop of the program, while the client is idle (the
  // connection asks between its packets), a turn at a time: the history
  // recorded before the stop is summed up (ReplayEngine::sum_up_histories)
  // a few runs per turn (about a millisecond), so that neither the stop's
  // reply nor the first read far back waits for it; then the checkpoints
  // the recording took sparsely are filled in, one per turn
  // (ReplayEngine::fill_in_checkpoints). end_idle() drops the code read
  // meanwhile, before the next request; a reverse resume first finishes
  // the summing up (sum_up_past).
  bool wants_idle_turn() const;
  // Whether the next turn fills in a checkpoint: a read of the stretch, a
  // fork and a re-run, 5-10 ms, for the connection to start only once the
  // client has been quiet a while (its packets after a stop come in bursts).
  bool idle_turn_is_long() const { return !wants_sum_up() && wants_fill_in(); }
  void idle_turn();
  void end_idle();

  // All-stop: the program runs (a stop reply is owed). Non-stop: some
  // thread runs.
  bool running() const;
  // Whether process events are to be polled for: while the program runs
  // in all-stop, always in non-stop (a thread may stop or exit any time).
  bool awaiting_events() const { return non_stop ? has_process() : running_; }
  // Whether `tid` runs: all-stop, as the whole program; non-stop, as its own.
  bool thread_running(pid_t tid) const;
  // Non-stop: the next `%Stop:` notification payload to send, if any
  // (queued by on_process_event; see protocol/stop_notifications.h).
  std::optional<std::string> take_notification();
  bool has_process() const { return !inferiors_.empty(); }
  // The process of the general thread (Hg), else the first one debugged;
  // nullptr when none is. A held fork child that Hg names becomes a
  // debugged process here, on the first request that needs it as one
  // (gdb's detach-on-fork off reads its registers; z0 and D do not).
  Process* process();
  // Every debugged process (the program and the fork children kept).
  ProcessGroup& inferiors() { return inferiors_; }
  const ProcessGroup& inferiors() const { return inferiors_; }
  // The program the server started or attached to, while it is debugged:
  // the one the branch tracer and the replay engine follow.
  Process* program() const;
  // The next event of any debugged process (all-stop across them).
  std::optional<ProcessEvent> poll_event() { return inferiors_.poll_event(); }

  // ---- state the handlers share (public for the handler functions) ----
  struct Features {
    bool multiprocess = false;
    bool swbreak = false;
    bool hwbreak = false;
    bool exec_events = false;  // exec-events+: report exec as `exec:` stops
    bool fork_events = false;   // fork-events+: report forks, hold the child
    bool vfork_events = false;  // vfork-events+: report vforks and vforkdone
    bool no_resumed = false;    // no-resumed+: `N` when no resumed thread is left
  };
  Features client_features;
  pid_t general_thread = 0;   // Hg; 0: the process's main thread
  pid_t continue_thread = 0;  // Hc; 0 or -1: all
  pid_t continue_process = 0; // Hc pPID.0 or pPID.-1: the threads of PID (0: of every process)
  // After Hc pPID.0 (gdb's, with a fork child kept, before s and bs while
  // it has the child selected): `tid` if it is a thread of PID, else the
  // thread that last stopped if it is one, else PID's main thread.
  // Otherwise `tid`.
  pid_t within_continue_process(pid_t tid) const;
  // The thread the last stop reply named, else 0.
  pid_t last_stopped_thread() const {
    return last_stop && last_stop->thread && last_stop->thread->tid > 0 ? static_cast<pid_t>(last_stop->thread->tid)
                                                                        : 0;
  }
  // Hg named a held fork child: z0 then removes the int3s it inherited
  // (gdb's detach_breakpoints), not the parent's; other requests adopt it
  // as a debugged process (process()).
  pid_t general_fork_child = 0;
  // Makes the held fork child `child` a debugged process; nullptr if no
  // process holds it.
  Process* adopt_fork_child(pid_t child);
  // Adopts every held fork child: before `k` kills every process, a child
  // gdb has an inferior for must die too, not go free.
  void adopt_held_fork_children();
  std::set<int> pass_signals;     // host numbers: delivered without stopping
  // QCatchSyscalls: the system calls whose entries and returns stop the
  // program (empty: every one); nullopt: none.
  std::optional<std::set<int>> caught_syscalls;
  std::set<int> program_signals;  // host numbers; empty set: all may reach the program
  bool program_signals_set = false;
  // Whether a signal that stopped the program goes on to it when the
  // client resumes without naming one: in QProgramSignals, or without that
  // list anything but SIGTRAP and SIGINT (as gdbserver reads it).
  bool program_gets(int host_signal) const {
    return program_signals_set ? program_signals.count(host_signal) != 0
                               : host_signal != SIGTRAP && host_signal != SIGINT;
  }
  // The signal a live thread stood stopped with when the client went back
  // into the recorded past (host number). The client forgets it there (its
  // later stops are the replay's, and a reverse resume gives no signal),
  // so the thread's first live resume without one delivers it, if the
  // program gets it: going back never changes the present.
  std::map<pid_t, int> owed_live_signals;
  std::optional<protocol::StopReply> last_stop;
  HostFiles host_files;
  // Extended remote (handlers_extended.cc): `!` seen; who starts programs;
  // the argv of the last vRun (for R and a later vRun with an empty argv[0]).
  bool extended = false;
  ProcessFactory* process_factory = nullptr;
  std::vector<std::string> last_run_argv;
  RunSettings run_settings;
  // QThreadEvents: report thread exits (`w`); kept for later programs too.
  bool thread_events = false;
  // Non-stop mode (QNonStop:1; handlers_non_stop.cc). Stops are queued
  // and told by `%Stop:` notifications; `thread_stops` keeps each stopped
  // thread's last reported stop (what `?` lists again), a resumed thread
  // has none.
  bool non_stop = false;
  protocol::StopNotifications stop_notifications;
  std::map<pid_t, protocol::StopReply> thread_stops;
  // Queues `stop` for the client, with a notification if it is the first.
  void queue_stop(const protocol::StopReply& stop);
  // gdb reads an `info os` document in chunks: each from the copy built when
  // it read offset 0, one copy per type (annex), dropped once read to its end.
  std::map<std::string, std::string, std::less<>> osdata_snapshots;
  // monitor set debug-format / libthread-db-search-path (handlers_monitor.cc).
  bool packet_log_timestamps = false;
  std::string libthread_db_search_path = "$sdir:$pdir";
  // Branch tracing (handlers_btrace.cc). No backend: the btrace packets are
  // neither advertised nor served.
  TraceBackend* trace_backend = nullptr;
  struct BtraceReads {
    std::map<pid_t, uint64_t> seen;  // per thread: end_sequence() at its last trace read
    std::map<pid_t, uint64_t> seen_pc;  // per pt thread: its pc at its last trace read
    // Per pt thread: end_sequence() and pc when Qbtrace:pt turned it on,
    // where the PT stream begins (a whole-program trace began earlier).
    std::map<pid_t, std::pair<uint64_t, uint64_t>> pt_start;
    std::map<pid_t, uint64_t> pt_sizes;  // per pt thread: its buffer size as btrace-conf reports it
    std::string cached_key;  // "object:annex:tid" of the document in `cached`
    // The document gdb is reading in chunks: a copy of a small one, or one
    // written as gdb reads it (a whole BTS trace can be hundreds of MB).
    std::optional<BtraceDocument> cached;
    uint64_t pt_size = 0;            // Qbtrace-conf:pt:size: the size threads enabled with Qbtrace:pt get
    // Threads the client turned tracing on for with Qbtrace:bts or
    // Qbtrace:pt, and the format it reads their trace in. A thread
    // traced only by whole-program recording (--record, monitor record
    // start) is not among them: gdb must not see its trace as its own
    // `record btrace`, or it would replay with its own target instead of
    // asking btstub with bs/bc.
    std::map<pid_t, protocol::BtraceFormat> client_enabled;
  };
  BtraceReads btrace_reads;
  // Called as a reverse or forward continue scans a long history
  // (decoder::ScanTurn): the server reports progress to the client there
  // and stops the scan at its interrupt. Unset: no turns.
  std::function<bool(uint64_t scanned, uint64_t most)> replay_turn;
  // Reverse execution (handlers_replay.cc). Breakpoint addresses inserted
  // with Z0 / Z1: a replay stops at them. Tests may replace how the engine
  // learns the read-only mappings (default: /proc/PID/maps).
  std::set<uint64_t> software_breakpoints;
  std::set<uint64_t> hardware_breakpoints;
  std::function<std::unique_ptr<MappingInfo>(pid_t pid)> replay_maps;
  // The replay engine over trace_backend, created on first use; nullptr
  // without a trace backend or a program.
  ReplayEngine* replay();
  // True while `tid` stands in its recorded past.
  bool replaying(pid_t tid) const;
  bool any_replaying() const;
  // Whether the trace backend records some thread of the program: all of
  // them (--record, monitor record start; also before there is a program)
  // or those gdb's `record btrace` enabled one by one.
  bool records_a_thread();
  // Every thread back at its live end (before the program runs again, or
  // when the traces may change under the engine).
  void go_live();
  // The thread's registers and memory: in the past while it replays.
  Expected<protocol::RegisterFile> thread_registers(pid_t tid);
  // The registers the client sees (target.xml, g/G/p/P): the process's,
  // or with none yet this machine's, as a new program would have them.
  protocol::RegisterLayout register_layout();
  Expected<std::vector<uint8_t>> thread_memory(pid_t tid, uint64_t addr, std::size_t len);

  // libthread_db, one per debugged process (handlers_thread_db.cc): the
  // qSymbol exchange feeds it, qGetTLSAddr asks it. Dropped with the
  // process and at its exec. Tests may replace how it is opened.
  ThreadLibrary::Opener open_thread_db = process::open_thread_db;
  std::map<pid_t, std::unique_ptr<ThreadLibrary>> thread_libraries;
  // The process's, created on first use; it reads a thread that replays in
  // its past.
  ThreadLibrary& thread_library(Process& owner);
  // While set, libthread_db reads every thread in the present, even one
  // that replays (see handle(GetTlsAddress)).
  bool thread_db_reads_present = false;
  // The signals delivered to `process` without a stop: the client's
  // (QPassSignals), and once libthread_db is attached to it glibc's own
  // two (SIGCANCEL and SIGSETXID, the kernel's 32 and 33: pthread_cancel,
  // setuid in a threaded program), as gdbserver passes them then
  // (linux-low.cc, wait_1) unless the thread steps. gdb would otherwise
  // stop with "received signal SIG32".
  std::set<int> signals_passed(const Process& process) const;
  // Tells every process its signals_passed (after a change of either part).
  void update_passed_signals();

  // LLDB (handlers_lldb.cc). `client` turns on at LLDB's first packet of
  // its own (gdb sends none), so that what only LLDB is owed follows
  // lldb-server (a reply to `k`) while gdb's sessions stay gdbserver's.
  // QEnableErrorStrings: "E.text" errors go out as LLDB reads them.
  // `told_stops`: the stops a thread stop query handed over since the
  // last resume (a kept event is the client's once told). `allocations`:
  // _M's mappings and their sizes, for _m.
  struct LldbState {
    bool client = false;
    bool error_strings = false;
    std::map<pid_t, protocol::StopReply> told_stops;
    std::map<uint64_t, uint64_t> allocations;
  };
  LldbState lldb;

  // The step run ahead of the client, if any (run_ahead()); the resume
  // handler answers from it.
  StepAhead step_ahead;

  // Helpers used by several handler families.
  protocol::ThreadId thread_id(pid_t tid) const;
  Expected<pid_t> resolve_thread(const protocol::ThreadId& id) const;
  pid_t current_thread() const;
  void mark_running() {
    running_ = true;
    lldb.told_stops.clear();
  }
  // Every process is gone (killed, detached, exited).
  void mark_process_gone();
  void drop_checkpoints();
  // One process is gone; the others are still debugged, and so is the
  // fork child it held (adopted first).
  void forget_process(Process* process);
  // Switches to another program (nullptr: none), forgetting everything
  // that belonged to the previous one (fork children kept are dropped).
  void set_process(Process* process);
  std::string stop_reply_payload(const protocol::StopReply& stop) const;
  protocol::StopReply make_stop_reply(const ProcessEvent& event);
  void sum_up_past();
  void sum_up(std::size_t most_runs);
  void set_hardware_reason(protocol::StopReply& stop, protocol::BreakpointType type, uint64_t address) const;

 private:
  Process* owner_or_selected(pid_t tid);
  Process* process_of_event(const ProcessEvent& event) const;
  std::optional<std::string> on_non_stop_event(const ProcessEvent& event, Process* process);
  bool may_run_ahead(pid_t tid);
  static bool leaves_step_ahead(const protocol::Request& request);


  SessionConfig config_;
  Process* program_;  // see program()
  ProcessGroup inferiors_;
  bool running_ = false;
  bool interrupt_owed_ = false;  // see on_interrupt()
  std::unique_ptr<ReplayEngine> replay_;
  bool run_ahead_due_ = false;  // the last reply was a bare single step's stop
  bool sum_up_due_ = false;     // history recorded before a stop may need summing up
  bool fill_in_due_ = false;    // checkpoints recorded before a stop may need filling in
  std::vector<std::string> notifications_;  // non-stop: `%Stop:` payloads to send
};

}  // namespace stub::session
