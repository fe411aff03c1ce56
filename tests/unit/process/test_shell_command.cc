// shell_argv: the shell gets one command that execs exactly the words
// given, whatever characters they hold.
#include <catch2/catch.hpp>

#include "stub/process/shell_command.h"

namespace test_shell_command {  // this file's own names, apart in a unity build

using stub::process::shell_argv;
using stub::process::shell_quote;

TEST_CASE("shell_quote keeps every character literal") {
  CHECK(shell_quote("prog") == "'prog'");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("$HOME *.c `x` \"q\" a\\b") == "'$HOME *.c `x` \"q\" a\\b'");
}

TEST_CASE("shell_argv execs the wrapper and program words through the shell") {
  auto argv = shell_argv("/bin/sh", {"/usr/bin/env", "X=1", "--", "/tmp/prog", "a b"});
  REQUIRE(argv.size() == 3);
  CHECK(argv[0] == "/bin/sh");
  CHECK(argv[1] == "-c");
  CHECK(argv[2] == "exec '/usr/bin/env' 'X=1' '--' '/tmp/prog' 'a b'");
}

}  // namespace test_shell_command
