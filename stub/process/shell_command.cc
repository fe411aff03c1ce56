#include "stub/process/shell_command.h"

#include <cstdlib>

namespace stub::process {

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char ch : word) {
    if (ch == '\'') {
      out += "'\\''";  // close, an escaped quote, reopen
    } else {
      out += ch;
    }
  }
  out += '\'';
  return out;
}

std::vector<std::string> shell_argv(const std::string& shell, const std::vector<std::string>& words) {
  std::string command = "exec";
  for (const auto& word : words) command += " " + shell_quote(word);
  return {shell, "-c", command};
}

std::string startup_shell() {
  const char* shell = std::getenv("SHELL");
  return shell != nullptr && *shell != '\0' ? shell : "/bin/sh";
}

}  // namespace stub::process
