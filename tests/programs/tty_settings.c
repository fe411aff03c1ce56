// Reads and rewrites its terminal's settings, as editors and shells do at
// start-up (test_terminal.py). Only the terminal's foreground process group
// may change them: a background program is stopped by SIGTTOU.
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

int main(void) {
  struct termios settings;
  int got = tcgetattr(STDIN_FILENO, &settings);
  printf("tcgetattr: %d\n", got);
  int set = tcsetattr(STDIN_FILENO, TCSANOW, &settings);  // MARK: tcsetattr
  printf("tcsetattr: %d\n", set);
  printf("foreground: %s\n", tcgetpgrp(STDIN_FILENO) == getpgrp() ? "yes" : "no");
  return 0;
}
