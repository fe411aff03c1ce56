#!/usr/bin/env python3
"""glibc's own signals are not the client's (cancel_threads.c, -O0):
`pthread_cancel` of a thread blocked in read and of one in sleep sends
each glibc's SIGCANCEL (the kernel's 32). Once libthread_db knows the
program (gdb's qSymbol exchange), gdbserver delivers it, and SIGSETXID
(33), without a stop; btstub too (not recording, and `--record`):
`break mark`, `continue` from the first mark to the second stops nowhere
between (before, gdb said "received signal SIG32, Real-time event 32"
twice), the program's cleanup handlers run and it exits with their sum
(11), as under gdbserver.

    python3 test_glibc_signals.py [--server gdbserver] [-v]
"""

from harness import program, run_gdb_tcp, run_test

COMMANDS = ["break mark", "continue", "continue", "continue", "continue", "continue"]


def check(args, c, options, tag):
    prog = program("cancel_threads", "O0")
    result, server = run_gdb_tcp(args.server, prog, [], COMMANDS, options=options, timeout=120)
    ctx = result.transcript() + "\n--- server stdout ---\n" + server.stdout + "\n--- stderr ---\n" + server.stderr
    c.contains("%s: the first mark" % tag, result.of(1), "Breakpoint 1, mark (step=1)", ctx)
    c.contains("%s: from it straight to the second" % tag, result.of(2), "Breakpoint 1, mark (step=2)", ctx)
    c.not_contains("%s: no stop for glibc's signals" % tag, result.transcript(), "SIG32", ctx)
    c.contains("%s: the threads were cancelled" % tag, server.stdout, "cleaned 11 canceled 1 1", ctx)
    c.true("%s: the program exits with the cleanups' sum" % tag,
           any("exited with code 013]" in result.of(i) for i in range(len(COMMANDS))), ctx)


def main(args, c):
    check(args, c, ("--once",), "live")
    if args.server == "btstub":
        check(args, c, ("--once", "--record"), "--record")


if __name__ == "__main__":
    run_test("test_glibc_signals", main)
