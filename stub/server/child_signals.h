#pragma once
// SIGCHLD as something Asio can wait on, through a signalfd.
//
// Why not boost::asio::signal_set: it catches the signal with a handler that
// writes to a self-pipe, which is a signal delivery, a write, a sigreturn
// and two reads per stop of the program. btstub takes tens of thousands of
// stops a second while single-stepping or tracing, and system calls are
// expensive in the VMs it runs in. With SIGCHLD blocked and read from a
// signalfd, a wake-up costs one read, and stops reaped while draining cost
// nothing extra. Programs btstub starts get an empty signal mask back
// (ptrace_process.cc, run_child).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <utility>

namespace stub::server {

class ChildSignals {
 public:
  explicit ChildSignals(boost::asio::io_context& io) : descriptor_(io) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
    int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd >= 0) descriptor_.assign(fd);
  }
  ~ChildSignals() {
    boost::system::error_code ignored;
    descriptor_.close(ignored);
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ChildSignals(const ChildSignals&) = delete;
  ChildSignals& operator=(const ChildSignals&) = delete;

  // Calls handler(error_code) once SIGCHLD has arrived (or at once, with an
  // error, when cancelled). The pending signal is consumed first: only one
  // SIGCHLD can be pending, and the handler reaps every child event anyway.
  template <class Handler>
  void async_wait(Handler handler) {
    descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [this, handler = std::move(handler)](boost::system::error_code ec) mutable {
                             if (!ec) {
                               signalfd_siginfo info;
                               (void)::read(descriptor_.native_handle(), &info, sizeof info);
                             }
                             handler(ec);
                           });
  }

  void cancel(boost::system::error_code& ec) { descriptor_.cancel(ec); }

 private:
  boost::asio::posix::stream_descriptor descriptor_;
  sigset_t old_mask_;
};

}  // namespace stub::server
