#!/usr/bin/env python3
"""The basic_session.py gdb session over stdio:
`target remote | SERVER - basic_O0 alpha beta` (and the `stdio` synonym for a
short session). The server's stderr, and the program's output with it, reach
gdb's stderr, which the harness captures together with gdb's output.

    python3 test_stdio_mode.py [--server gdbserver] [-v]
"""

import shlex

import basic_session
from harness import program, run_gdb, run_test, server_path


def main(args, c):
    prog = program("basic")
    commands, _ = basic_session.build()
    target = "| " + shlex.join([server_path(args.server), "-", prog] +
                               basic_session.ARGS)
    result = run_gdb(commands, prog, target)
    basic_session.check(c, result, result.output, "stdio: ")
    c.matches("stdio: server reports the process", result.preamble,
              r"^Process \S+basic_O0 created; pid = \d+$", result.transcript())

    # `stdio` is a synonym of `-`; no arguments: exit code 10 + 1.
    target = "| " + shlex.join([server_path(args.server), "stdio", prog])
    result = run_gdb(["break add_one", "continue", "print v", "delete",
                      "continue"], prog, target)
    ctx = result.transcript()
    c.lines("stdio synonym: breakpoint", result.of(1),
            ["Breakpoint 1, add_one (v=138) at basic.c:%d" %
             basic_session.line_no("add_one_body")], ctx)
    c.lines("stdio synonym: print", result.of(2), ["$1 = 138"], ctx)
    c.matches("stdio synonym: exit code 11", result.of(4),
              r"^\[Inferior 1 \(process \d+\) exited with code 013\]$", ctx)


if __name__ == "__main__":
    run_test("test_stdio_mode", main)
