#include "stub/server/terminal.h"

#include <signal.h>
#include <unistd.h>

namespace stub::server {

TerminalLender::TerminalLender() {
  // Ignored first: a background btstub may then take and give the terminal
  // without being stopped for it (tcsetpgrp from the background).
  ::signal(SIGTTOU, SIG_IGN);
  ::signal(SIGTTIN, SIG_IGN);
  owner_ = ::tcgetpgrp(STDERR_FILENO);
}

TerminalLender::~TerminalLender() {
  if (owner_ > 0) (void)::tcsetpgrp(STDERR_FILENO, owner_);
}

}  // namespace stub::server
