#!/usr/bin/env python3
"""One gdb script on tests/programs/basic.c, run against gdbserver (the
reference) and against the server under test, in the same test. The two
transcripts, normalised (pids, the "Remote debugging using" line, stack
addresses, which depend on the environment a server gives the program), must
be identical line by line: same stops, lines, values and exit code. The
program's own output (server stdout) must be identical too.

    python3 test_side_by_side.py [--server gdbserver] [-v]

With --server gdbserver both runs use gdbserver, which shows that the
comparison itself is deterministic.
"""

import harness
from harness import check_same_transcript, program, run_gdb_tcp, run_test

COMMANDS = [
    "break compute",
    "tbreak add_one",
    "info breakpoints",
    "continue",
    "next",
    "next",
    "step",
    "info locals",
    "bt",
    "finish",
    "print result",
    "next",
    "step",
    "bt",
    "up",
    "print result",
    "down",
    "finish",
    "continue",
    "print v",
    "print $rip",
    "info registers rip eflags cs ss",
    "stepi",
    "stepi",
    "nexti",
    "x/2i $pc",
    "print counter",
    "print origin",
    "print squares",
    "print greeting",
    "x/4xw squares",
    "finish",
    "until",
    "advance sse_work",
    "finish",
    "print $xmm0.v2_double[0]",
    "info sharedlibrary",
    "delete",
    "continue",
]


def main(args, c):
    prog = program("basic")
    runs = {}
    for kind in ("gdbserver", args.server):
        result, server = run_gdb_tcp(kind, prog, ["alpha", "beta"], COMMANDS)
        runs.setdefault(kind, []).append((result, server))
        if harness.VERBOSE:
            print(result.transcript())
    (ref, ref_server), (test, test_server) = (runs["gdbserver"][0],
                                              runs[args.server][-1])
    c.contains("reference run reached the exit", ref.of(-1),
               "exited with code 07", ref.transcript())
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server)
    c.equal("same program output as under gdbserver", ref_server.stdout,
            test_server.stdout)
    c.equal("same gdb exit status", ref.status, test.status)


if __name__ == "__main__":
    run_test("test_side_by_side", main)
