#pragma once
// The btstub server: starts or attaches to the program, accepts connections
// (TCP or stdio) and serves each with a Session, as gdbserver does.
#include <memory>

#include "stub/options.h"
#include "stub/process.h"

namespace stub {

class Server {
 public:
  explicit Server(CommandLine command_line);
  // Returns the process exit status for main().
  int run();

 private:
  Expected<std::unique_ptr<Process>> start_program();
  // Ends the program's part in a finished connection: a program btstub
  // started is killed, an attached one detached.
  void release_program();
  int serve_stdio();
  int serve_tcp();

  CommandLine command_line_;
  std::unique_ptr<Process> process_;
};

}  // namespace stub
