#pragma once
// Serves one client connection: reads bytes, feeds the RspLink, hands packets
// to the Session, writes replies, and watches the program through SIGCHLD so
// a stop (or a Ctrl-C from the client) is noticed while waiting for packets.
//
// After a reply that leaves the program stopped, the connection polls for
// the client's next packet for a while (--busy-poll) before going back to
// the event loop's sleep. In the VMs btstub runs in, waking a sleeping
// process costs tens of µs (an idle vCPU halts and needs an interrupt), and
// gdb's next packet usually follows sooner than that: a `stepi` is a stop
// reply, a memory read and the next step, 1,500 times for `stepi 1500`.
// A running program is not polled for: it needs the CPU btstub shares with
// it, and its stop wakes btstub on that same CPU, which is cheap.
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>

#include <boost/asio.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "protocol/replies.h"
#include "protocol/rsp_link.h"
#include "stub/server/child_signals.h"
#include "stub/server/termination_signals.h"
#include "stub/session/session.h"

namespace stub::server {

using session::Reply;
using session::Session;

struct ConnectionResult {
  bool exit_server = false;
};

template <class ReadStream, class WriteStream>
class Connection {
 public:
  Connection(boost::asio::io_context& io, ReadStream& in, WriteStream& out, Session& session,
             ChildSignals& sigchld, TerminationSignals& terminate, bool remote_debug,
             std::chrono::microseconds busy_poll,
             std::chrono::seconds replay_progress)
      : io_(io),
        in_(in),
        out_(out),
        session_(session),
        sigchld_(sigchld),
        terminate_(terminate),
        remote_debug_(remote_debug),
        busy_poll_(busy_poll),
        replay_progress_(replay_progress) {
    session_.replay_turn = [this](uint64_t scanned, uint64_t most) { return replay_turn(scanned, most); };
  }
  ~Connection() { session_.replay_turn = nullptr; }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  ConnectionResult run() {
    start_read();
    watch_children();
    // Ends the connection as a hang-up does; the server then lets the
    // program go and exits (termination_signals.h).
    terminate_.async_wait([this] {
      closing_ = true;
      finish();
    });
    io_.run();
    io_.restart();
    return result_;
  }

 private:
  // Waits for the client's bytes without reading them: Asio reads ahead
  // where it can (a read started with bytes waiting completes at once, its
  // handler queued behind any other), and the polls of busy_poll() and
  // idle_turns() would then wait for bytes already taken, behind a
  // SIGCHLD's handler (the copies that fill in checkpoints end with one):
  // measured, every packet of a session waited out the 200 ms quiet wait.
  // So the descriptor alone says whether a packet came.
  void start_read() {
    in_.async_wait(ReadStream::wait_read, [this](boost::system::error_code ec) {
      if (ec || finished_) {
        finish();
        return;
      }
      // A poll or a handler may have read them meanwhile.
      if (input_ready()) {
        std::size_t n = in_.read_some(boost::asio::buffer(buffer_), ec);
        if (ec) {
          finish();  // hung up
          return;
        }
        receive(n);
      }
      busy_poll();
      idle_turns();
      if (closing_) {
        finish();
      } else {
        start_read();
      }
    });
  }

  void watch_children() {
    sigchld_.async_wait([this](boost::system::error_code ec) {
      if (ec || finished_) return;  // cancelled: the connection is over
      bool replied = drain_process_events();
      flush();
      // Only after a stop reply: a SIGCHLD whose stop the busy poll already
      // reaped wakes us too, with nothing to say and nobody about to answer.
      if (replied) busy_poll();
      idle_turns();
      if (closing_) {
        finish();
        return;
      }
      watch_children();
    });
  }

  void receive(std::size_t n) {
    link_.receive(std::string_view(buffer_.data(), n));
    handle_inbound();
    flush();
  }

  // Returns whether a stop reply (or, in non-stop mode, a stop
  // notification) was sent.
  bool drain_process_events() {
    if (!session_.has_process() || !session_.awaiting_events()) return false;
    bool replied = false;
    while (auto event = session_.poll_event()) {  // from any debugged process
      if (auto reply = session_.on_process_event(*event)) {
        send(*reply);
        replied = true;
      }
      if (!session_.awaiting_events()) break;
    }
    return send_notifications() || replied;
  }

  // Non-stop mode: the `%Stop:` notifications the session queued.
  bool send_notifications() {
    bool sent = false;
    while (auto notification = session_.take_notification()) {
      if (remote_debug_) log_line("putpkt_notif (\"%" + *notification + "\")");
      link_.send_notification(*notification);
      sent = true;
    }
    return sent;
  }

  // While the program is stopped, handles the client's packets as they
  // come, without sleeping, until none has come for busy_poll_ (see the top
  // of this file). Stops at once when a packet resumes the program (its stop
  // wakes us through SIGCHLD, cheaply: it runs on our CPU).
  //
  // Each poll round yields the CPU. The client is often woken on btstub's
  // CPU (the reply's wake-up is a "sync" one that pulls it here), and the
  // scheduler need not preempt a poller for it: measured here, gdb then
  // waited out the whole poll (500 µs) on about one reply in five. A yield
  // runs it at once, and btstub, still runnable, sees its packet without
  // being woken; with nothing else runnable a yield is one cheap syscall.
  //
  // Polling pays only on an otherwise idle CPU. When another process wants
  // it for long (a build, even at nice 19), each yield hands it a time
  // slice (ms) that a packet must wait out, where a sleeping btstub would be
  // woken ahead of it; measured here, polling then made `stepi 1500` twice
  // as slow. A poll round far longer than the client's own work on a reply,
  // in which the kernel switched btstub out, shows such a slice. One alone
  // ends the poll: on the machines measured, something else runs for ~4 ms
  // every so often (a system daemon, gdb reading symbols), and pausing for
  // that cost the next 100 ms of polling, a third of `stepi 1500`. A second
  // within kContendedWindow means the CPU is contended: btstub then sleeps at
  // once, for every reply of the next kContendedPause.
  void busy_poll() {
    using clock = std::chrono::steady_clock;
    constexpr auto kDescheduled = std::chrono::microseconds(400);
    constexpr auto kContendedWindow = std::chrono::milliseconds(50);
    constexpr auto kContendedPause = std::chrono::milliseconds(100);
    if (busy_poll_.count() <= 0) return;
    auto last = clock::now();
    if (last < contended_until_) return;
    auto deadline = last + busy_poll_;
    long preemptions = involuntary_switches();
    while (!closing_ && !finished_ && !session_.running()) {
      const bool ready = input_ready();
      auto now = clock::now();
      // Measured whether or not the packet came meanwhile: under load it
      // usually has, by the time a competitor hands the CPU back.
      bool long_round = now - last > kDescheduled && preempted_since(preemptions);
      if (long_round) {
        if (now - last_long_round_ < kContendedWindow) contended_until_ = now + kContendedPause;
        last_long_round_ = now;
      }
      if (ready) {
        boost::system::error_code ec;
        std::size_t n = in_.read_some(boost::asio::buffer(buffer_), ec);
        if (ec) {
          closing_ = true;  // the client hung up: finish() follows in the caller
          return;
        }
        receive(n);
        if (long_round) return;
        last = clock::now();
        deadline = last + busy_poll_;
        preemptions = involuntary_switches();  // a switch while handling it is no poll round's
        continue;
      }
      if (long_round || now >= deadline) return;
      last = now;
      ::sched_yield();
    }
  }

  // Once the client is idle (no packet came during the busy poll): the
  // work the session does ahead between packets (Session::wants_idle_turn),
  // a turn at a time, until a packet comes.
  // A long turn (a checkpoint filled in, 5-10 ms) waits for the client to
  // have been quiet for kQuietBeforeLongTurns first, once per idle
  // stretch: a client's packets after a stop come with gaps of
  // milliseconds to tens of them (gdb reading files over vFile, 25 ms a
  // read here), and each would otherwise wait out a turn; a person at the
  // prompt is quiet far longer.
  void idle_turns() {
    constexpr int kQuietBeforeLongTurns = 200;  // ms
    bool quiet = false;
    while (!closing_ && !finished_ && session_.wants_idle_turn() && !link_.packet_waiting() && !input_ready()) {
      if (session_.idle_turn_is_long() && !quiet) {
        if (!input_ready(kQuietBeforeLongTurns) && session_.wants_idle_turn()) {
          quiet = true;
          continue;
        }
        break;  // the packet is read as the caller goes on
      }
      session_.idle_turn();
    }
    session_.end_idle();
  }

  // How often the kernel switched this thread out while it could run. A
  // long poll round without one was the hypervisor pausing the whole vCPU
  // (steal time): nothing on this machine wants the CPU, so polling goes on.
  static long involuntary_switches() {
    rusage usage{};
    return ::getrusage(RUSAGE_THREAD, &usage) == 0 ? usage.ru_nivcsw : -1;
  }
  static bool preempted_since(long before) {
    long now = involuntary_switches();
    return before < 0 || now < 0 || now != before;
  }

  // Readable now, or hung up (the read then reports it).
  // Within `timeout_ms`: poll's wait.
  bool input_ready(int timeout_ms = 0) {
    pollfd p{};
    p.fd = in_.native_handle();
    p.events = POLLIN;
    return ::poll(&p, 1, timeout_ms) > 0;
  }

  void handle_inbound() {
    while (!closing_) {
      auto inbound = link_.next();
      if (!inbound) break;
      if (std::holds_alternative<protocol::InboundInterrupt>(*inbound)) {
        if (remote_debug_) log_line("btstub: interrupt");
        session_.on_interrupt();
        continue;
      }
      const std::string& payload = std::get<protocol::InboundPacket>(*inbound).payload;
      if (remote_debug_) log_line("getpkt (\"" + payload + "\")");
      request_started_ = std::chrono::steady_clock::now();
      Reply reply = session_.handle_packet(payload);
      if (reply.packet_log) remote_debug_ = *reply.packet_log;
      if (reply.packet_log_timestamps) log_timestamps_ = *reply.packet_log_timestamps;
      if (reply.payload && client_gave_up(payload)) {
        reply.payload.reset();
        reply.console.clear();
      }
      for (const std::string& output : protocol::reply_console_output(reply.console)) send(output);
      if (reply.payload) send(*reply.payload);
      if (payload == "QStartNoAckMode" && reply.payload == protocol::reply_ok()) link_.set_no_ack_mode(true);
      if (reply.exit_server) result_.exit_server = true;
      if (reply.close_connection || reply.exit_server) closing_ = true;
      // The program may already have stopped again (a step is quick); its
      // SIGCHLD is queued too, but look now so no reply waits on it.
      // Non-stop resumes are answered (OK) at once; their stops follow.
      if ((!reply.payload || session_.non_stop) && !reply.close_connection) drain_process_events();
    }
  }

  // After a request that took long: whether the client sent its next one
  // meanwhile, having given up waiting (gdb's remote timeout is 2 s; it
  // then prints "Ignoring packet error" and goes on). Its reply must not
  // go out: the client would take it for the answer to the next request
  // ("Remote replied unexpectedly to ...", and every reply after it one
  // behind). Short requests are not looked at: a client may well send
  // packets back to back, and none gives up that soon.
  bool client_gave_up(const std::string& payload) {
    constexpr auto kLongRequest = std::chrono::seconds(1);
    const auto took = std::chrono::steady_clock::now() - request_started_;
    if (took < kLongRequest) return false;
    if (input_ready()) {
      boost::system::error_code ec;
      std::size_t n = in_.read_some(boost::asio::buffer(buffer_), ec);
      if (ec) {
        closing_ = true;  // hung up: the reply would go nowhere
        return false;
      }
      link_.receive(std::string_view(buffer_.data(), n));
    }
    if (!link_.packet_waiting()) return false;
    std::fprintf(stderr,
                 "btstub: warning: the client sent a new request before the reply to \"%.40s\" (%.1f s): "
                 "it gave up waiting, so that reply is not sent\n",
                 payload.c_str(), std::chrono::duration<double>(took).count());
    return true;
  }

  // A line of the packet log on stderr; with `monitor set debug-format
  // timestamp`, after the time as gdbserver writes it (seconds.microseconds).
  void log_line(const std::string& line) {
    if (log_timestamps_) {
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
      std::fprintf(stderr, "%lld.%06lld %s\n", static_cast<long long>(us / 1000000),
                   static_cast<long long>(us % 1000000), line.c_str());
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  void send(const std::string& payload) {
    if (remote_debug_) log_line("putpkt (\"" + payload + "\")");
    link_.send(payload);
  }

  // Once the client has a step's stop reply, the session may run the
  // next step ahead while the client works on it (stub/session/step_ahead.h).
  void flush() {
    if (!link_.has_output()) return;
    write_output();
    if (session_.wants_run_ahead() && !closing_ && !finished_) session_.run_ahead();
  }

  void write_output() {
    std::string bytes = link_.take_output();
    boost::system::error_code ec;
    boost::asio::write(out_, boost::asio::buffer(bytes), ec);
    if (ec) closing_ = true;
  }

  // A turn of a reverse or forward continue that scans a long history
  // (Session::replay_turn; the request is still being answered). gdb waits
  // for its stop reply without a timeout, but says nothing meanwhile: from
  // replay_progress_ on (--replay-progress) a console line every
  // replay_progress_ tells how far the scan has come, and the client's
  // interrupt (Ctrl-C) stops it where it is (SIGINT). A client that hung up
  // stops it too.
  bool replay_turn(uint64_t scanned, uint64_t most) {
    if (closing_ || finished_) return false;
    if (input_ready()) {
      boost::system::error_code ec;
      std::size_t n = in_.read_some(boost::asio::buffer(buffer_), ec);
      if (ec) {
        closing_ = true;
        return false;
      }
      link_.receive(std::string_view(buffer_.data(), n));
    }
    // Also one that came with the request, in the same read.
    if (link_.take_interrupt()) {
      if (remote_debug_) log_line("btstub: interrupt");
      return false;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - request_started_ >= replay_progress_ && now - last_progress_ >= replay_progress_) {
      last_progress_ = now;
      char line[160];
      std::snprintf(line, sizeof line,
                    "btstub: searching the history: %llu of at most %llu branches (%llu%%); Ctrl-C stops here\n",
                    static_cast<unsigned long long>(scanned), static_cast<unsigned long long>(most),
                    static_cast<unsigned long long>(most == 0 ? 100 : scanned * 100 / most));
      for (const std::string& output : protocol::reply_console_output(line)) send(output);
      write_output();
    }
    return !closing_;
  }

  // Cancels what is pending instead of stopping the io_context, so every
  // handler has run (and none refers to this object) when run() returns.
  void finish() {
    if (finished_) return;
    finished_ = true;
    flush();
    boost::system::error_code ignored;
    sigchld_.cancel(ignored);
    terminate_.cancel();
    in_.cancel(ignored);
  }

  boost::asio::io_context& io_;
  ReadStream& in_;
  WriteStream& out_;
  Session& session_;
  ChildSignals& sigchld_;
  TerminationSignals& terminate_;
  bool remote_debug_;
  bool log_timestamps_ = false;  // monitor set debug-format
  std::chrono::microseconds busy_poll_;
  std::chrono::seconds replay_progress_;
  std::chrono::steady_clock::time_point contended_until_{};  // no polling before then
  std::chrono::steady_clock::time_point last_long_round_{};  // see busy_poll
  std::chrono::steady_clock::time_point request_started_{};  // of the packet being answered
  std::chrono::steady_clock::time_point last_progress_{};    // see replay_turn
  protocol::RspLink link_;
  std::array<char, 4096> buffer_{};
  bool closing_ = false;
  bool finished_ = false;
  ConnectionResult result_;
};

}  // namespace stub::server
