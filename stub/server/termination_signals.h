#pragma once
// SIGTERM, SIGHUP and SIGINT as something Asio waits on. btstub then ends
// as a client's hang-up ends it: a program it attached to is detached (its
// breakpoints and the tracer's int3s and translated code taken out), one it
// started is killed; then it dies of the signal (main). Killed outright, it
// left its int3s in a program it had only attached to, which died of
// SIGTRAP at its next breakpoint or, recorded, at once.
//
// A boost::asio::signal_set: these signals come once, unlike SIGCHLD
// (child_signals.h). One that comes while nothing waits is kept for the
// next wait.
#include <boost/asio.hpp>
#include <csignal>
#include <utility>

namespace stub::server {

class TerminationSignals {
 public:
  explicit TerminationSignals(boost::asio::io_context& io) : set_(io, SIGTERM, SIGHUP, SIGINT) {}
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Calls handler() once a signal has come; not when cancelled.
  template <class Handler>
  void async_wait(Handler handler) {
    set_.async_wait([this, handler = std::move(handler)](const boost::system::error_code& ec, int signal) mutable {
      if (ec) return;
      received_ = signal;
      handler();
    });
  }
  void cancel() {
    boost::system::error_code ignored;
    set_.cancel(ignored);
  }
  // The signal that came (0: none).
  int received() const { return received_; }

 private:
  boost::asio::signal_set set_;
  int received_ = 0;
};

}  // namespace stub::server
