#!/usr/bin/env python3
"""Everyday gdb commands over TCP on tests/programs/basic.c (see
basic_session.py for the session and the expected values), plus a short
session on the -O2 build, and `kill` from a gdb without the multiprocess
feature (it sends vKill with its fake pid 42000: gdbserver kills the
program; btstub answered "Can't kill process" before), and gdb's `signal
SIGPOLL` (gdb's POLL, 33, is SIGIO on Linux: gdbserver delivers it and
the program dies of it; btstub resumed without a signal before).

    python3 test_basic_commands.py [--server gdbserver] [-v]
"""

import basic_session
from harness import Server, pid_alive, program, run_gdb, run_gdb_tcp, run_test, wait_until


def check_o0(args, c):
    commands, _ = basic_session.build()
    result, server = run_gdb_tcp(args.server, program("basic"),
                                 basic_session.ARGS, commands)
    basic_session.check(c, result, server.stdout, "O0: ")
    c.matches("O0: server reports the process", server.stderr,
              r"^Process \S+basic_O0 created; pid = \d+$")
    c.contains("O0: server reports the client", server.stderr,
               "Remote debugging from host 127.0.0.1, port ")


def check_o2(args, c):
    commands = ["break add_one", "continue", "bt 1", "finish",
                "delete", "continue"]
    result, server = run_gdb_tcp(args.server, program("basic", "O2"),
                                 ["only-one"], commands)
    ctx = result.transcript()
    # At -O2 add_one is also inlined into main: two locations, and gdb
    # shows the stop as "Breakpoint 1.1, 0x... in add_one (v=<optimized out>)".
    line = basic_session.line_no("add_one_body")
    c.matches("O2: breakpoint on optimised function", result.of(1),
              r"^Breakpoint 1(\.\d)?, (0x[0-9a-f]+ in )?add_one \(v=.*\) "
              r"at basic\.c:%d$" % line, ctx)
    c.matches("O2: bt", result.of(2),
              r"^#0  (0x[0-9a-f]+ in )?add_one \(v=.*\) at basic\.c:%d$" % line,
              ctx)
    c.matches("O2: finish returns to main", result.of(3),
              r"^(0x[0-9a-f]+ in )?main \(argc=2, argv=.*\) at basic\.c:\d+$",
              ctx)
    # argc == 2 and the arguments are not alpha beta: exit code 10 + 2.
    c.matches("O2: exit code 12", result.of(5),
              r"^\[Inferior 1 \(process \d+\) exited with code 014\]$", ctx)
    c.contains("O2: program output", server.stdout, "result=")


def check_kill_without_multiprocess(args, c):
    prog = program("basic")
    with Server(args.server, [prog] + list(basic_session.ARGS)) as server:
        pid = server.inferior_pid
        result = run_gdb(["kill"], prog, server.address, extra_init=["set remote multiprocess-feature-packet off"])
        ctx = result.transcript()
        c.matches("no multiprocess: kill", result.of(0), r"^\[Inferior 1 \(Remote target\) killed\]$", ctx)
        c.true("no multiprocess: the program is gone", wait_until(lambda: not pid_alive(pid), 10.0), ctx)


def check_signal_poll(args, c):
    result, _ = run_gdb_tcp(args.server, program("basic"), list(basic_session.ARGS),
                            ["break main", "continue", "signal SIGPOLL"])
    c.matches("signal SIGPOLL: the program dies of SIGIO", result.of(2),
              r"^Program terminated with signal SIGIO, I/O possible\.$", result.transcript())


def main(args, c):
    check_o0(args, c)
    check_o2(args, c)
    check_kill_without_multiprocess(args, c)
    check_signal_poll(args, c)


if __name__ == "__main__":
    run_test("test_basic_commands", main)
