#!/usr/bin/env python3
"""A fork child that ends its whole program while it is being detached
(gdb's gdb.threads/process-dies-while-detaching.exp, written out for
tests/programs/dies_while_detaching.c). Each case runs under gdbserver and
the server tested; the program's output must be the same.

With `set detach-on-fork off` and `set follow-fork-mode child` gdb stops
the child at child_ready() with 64 threads; `detach` lets them go one by
one, and the first one let go runs _exit (exit_group), which kills the
threads still held. Those stay the server's tracees, zombies, until it
reaps them; the parent's waitpid sees the child end only then.

1. continue: `detach`, `inferior 1`, `continue`: the parent prints "child
   exited, status=0" and exits normally (btstub left the killed threads
   unreaped, so the parent waited for as long as btstub lived, gdb's
   `continue` never returned, and gdb never sent the `monitor exit` the
   gdb testsuite ends with).
2. detach: `detach` of the child, then of the parent: both go free, the
   parent prints the same line, and a --once server ends (this passed
   before too: the --once server ended there, and its zombies with it).

    python3 test_dies_while_detaching.py [--server gdbserver] [-v]
"""

from harness import program, run_gdb_tcp, run_test

FOLLOW_CHILD = [
    "set detach-on-fork off",
    "set follow-fork-mode child",
    "break child_ready",
    "continue",
    "detach",
    "inferior 1",
]

CONTINUE_COMMANDS = FOLLOW_CHILD + ["continue"]
DETACH_COMMANDS = FOLLOW_CHILD + ["detach"]

LINE = "child exited, status=0\n"


def both(args, commands):
    runs = {}
    for kind in ("gdbserver", args.server):
        runs[kind] = run_gdb_tcp(kind, program("dies_while_detaching"), [],
                                 commands, timeout=40.0)
    return runs["gdbserver"], runs[args.server]


def check_continue(args, c):
    (ref, ref_server), (test, test_server) = both(args, CONTINUE_COMMANDS)
    ctx = "\n" + test.transcript()
    c.contains("continue: child stops with its threads", test.of(3),
               "child_ready ()", ctx)
    c.contains("continue: child detached", test.of(4), "detached]", ctx)
    c.contains("continue: parent exits normally", test.of(6),
               "exited normally]", ctx)
    c.true("continue: gdb ended by itself", test.status is not None, ctx)
    c.equal("continue: gdbserver's parent saw the child end", LINE,
            ref_server.stdout, "\n" + ref.transcript())
    c.equal("continue: same program output as gdbserver", ref_server.stdout,
            test_server.stdout, ctx)


def check_detach(args, c):
    (ref, ref_server), (test, test_server) = both(args, DETACH_COMMANDS)
    ctx = "\n" + test.transcript() + "\n--- server stderr ---\n" + test_server.stderr
    c.contains("detach: parent detached", test.of(6), "detached]", ctx)
    c.equal("detach: --once server ends", 0, test_server.proc.returncode, ctx)
    c.equal("detach: same program output as gdbserver", ref_server.stdout,
            test_server.stdout, ctx)
    c.equal("detach: the parent saw the child end", LINE, test_server.stdout,
            ctx)


def main(args, c):
    check_continue(args, c)
    check_detach(args, c)


if __name__ == "__main__":
    run_test("test_dies_while_detaching", main)
