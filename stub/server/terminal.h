#pragma once
// The terminal btstub runs on, lent to the programs it starts. gdbserver
// makes each program it launches the foreground process group of its
// terminal (the one on its stderr), so that the program reads the terminal,
// changes its settings (tcsetattr) and gets its Ctrl-C as it would without a
// debugger; a program in a background group is stopped by SIGTTOU/SIGTTIN
// instead. From then on gdbserver ignores SIGTTOU and SIGTTIN itself (it is
// in the background now, and must still be able to hand the terminal to the
// next program), and gives the terminal back to its first owner when it
// exits. btstub does the same (LaunchOptions::foreground hands it over).
#include <sys/types.h>

namespace stub::server {

class TerminalLender {
 public:
  // Notes who owns the terminal now (nobody when stderr is no terminal
  // or not btstub's controlling one) and ignores SIGTTOU and SIGTTIN.
  TerminalLender();
  // Gives the terminal back to the group that owned it at construction.
  ~TerminalLender();
  TerminalLender(const TerminalLender&) = delete;
  TerminalLender& operator=(const TerminalLender&) = delete;

 private:
  pid_t owner_ = -1;
};

}  // namespace stub::server
