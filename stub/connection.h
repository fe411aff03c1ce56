#pragma once
// Serves one client connection: reads bytes, feeds the RspLink, hands packets
// to the Session, writes replies, and watches the program through SIGCHLD so
// a stop (or a Ctrl-C from the client) is noticed while waiting for packets.
#include <boost/asio.hpp>

#include <array>
#include <cstdio>
#include <functional>
#include <string>

#include "protocol/replies.h"
#include "protocol/rsp_link.h"
#include "stub/child_signals.h"
#include "stub/session.h"

namespace stub {

struct ConnectionResult {
  bool exit_server = false;
};

template <class ReadStream, class WriteStream>
class Connection {
 public:
  Connection(boost::asio::io_context& io, ReadStream& in, WriteStream& out, Session& session,
             ChildSignals& sigchld, bool remote_debug)
      : io_(io), in_(in), out_(out), session_(session), sigchld_(sigchld), remote_debug_(remote_debug) {}

  ConnectionResult run() {
    start_read();
    watch_children();
    io_.run();
    io_.restart();
    return result_;
  }

 private:
  void start_read() {
    in_.async_read_some(boost::asio::buffer(buffer_), [this](boost::system::error_code ec, std::size_t n) {
      if (ec || finished_) {
        finish();
        return;
      }
      link_.receive(std::string_view(buffer_.data(), n));
      handle_inbound();
      flush();
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
      drain_process_events();
      flush();
      watch_children();
    });
  }

  void drain_process_events() {
    if (!session_.has_process() || !session_.running()) return;
    while (auto event = session_.poll_event()) {  // from any debugged process
      if (auto reply = session_.on_process_event(*event)) send(*reply);
      if (!session_.running()) break;
    }
  }

  void handle_inbound() {
    while (!closing_) {
      auto inbound = link_.next();
      if (!inbound) break;
      if (std::holds_alternative<protocol::InboundInterrupt>(*inbound)) {
        if (remote_debug_) std::fprintf(stderr, "btstub: interrupt\n");
        session_.on_interrupt();
        continue;
      }
      const std::string& payload = std::get<protocol::InboundPacket>(*inbound).payload;
      if (remote_debug_) std::fprintf(stderr, "getpkt (\"%s\")\n", payload.c_str());
      Reply reply = session_.handle_packet(payload);
      if (!reply.console.empty()) send(protocol::reply_console_output(reply.console));
      if (reply.payload) send(*reply.payload);
      if (payload == "QStartNoAckMode" && reply.payload == protocol::reply_ok()) link_.set_no_ack_mode(true);
      if (reply.exit_server) result_.exit_server = true;
      if (reply.close_connection || reply.exit_server) closing_ = true;
      // The program may already have stopped again (a step is quick); its
      // SIGCHLD is queued too, but look now so no reply waits on it.
      if (!reply.payload && !reply.close_connection) drain_process_events();
    }
  }

  void send(const std::string& payload) {
    if (remote_debug_) std::fprintf(stderr, "putpkt (\"%s\")\n", payload.c_str());
    link_.send(payload);
  }

  void flush() {
    if (!link_.has_output()) return;
    std::string bytes = link_.take_output();
    boost::system::error_code ec;
    boost::asio::write(out_, boost::asio::buffer(bytes), ec);
    if (ec) closing_ = true;
  }

  // Cancels what is pending instead of stopping the io_context, so every
  // handler has run (and none refers to this object) when run() returns.
  void finish() {
    if (finished_) return;
    finished_ = true;
    flush();
    boost::system::error_code ignored;
    sigchld_.cancel(ignored);
    in_.cancel(ignored);
  }

  boost::asio::io_context& io_;
  ReadStream& in_;
  WriteStream& out_;
  Session& session_;
  ChildSignals& sigchld_;
  bool remote_debug_;
  protocol::RspLink link_;
  std::array<char, 4096> buffer_{};
  bool closing_ = false;
  bool finished_ = false;
  ConnectionResult result_;
};

}  // namespace stub
