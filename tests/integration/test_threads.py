#!/usr/bin/env python3
"""All-stop threads on tests/programs/threads.c (main + 3 named workers),
one gdb script run against gdbserver (the reference) and the server under
test; normalised transcripts must be identical: info threads (names),
breakpoints hit in each worker in turn, `thread N`, `thread apply all bt`,
`set scheduler-locking step` + `next`, exit code 0.

    python3 test_threads.py [--server gdbserver] [-v]
"""

import harness
from harness import check_same_transcript, program, run_gdb_tcp, run_test

COMMANDS = [
    "break all_started",
    "continue",
    "info threads",
    "break work",
    "continue",
    "bt 1",
    "print id",
    "info threads",
    "thread 1",
    "bt 1",
    "thread apply all bt 1",
    "thread 2",
    "set scheduler-locking step",
    "next",
    "next",
    "print v",
    "set scheduler-locking replay",
    "continue",
    "print id",
    "continue",
    "print id",
    "delete",
    "continue",
]


def main(args, c):
    prog = program("threads")
    runs = {}
    for kind in ("gdbserver", args.server):
        result, server = run_gdb_tcp(kind, prog, [], COMMANDS)
        runs[kind] = (result, server)
        if harness.VERBOSE:
            print(result.transcript())
    ref, ref_server = runs["gdbserver"]
    test, test_server = runs[args.server]
    c.contains("reference run reached the exit", ref.of(-1), "exited normally",
               ref.transcript())
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server)
    c.equal("same program output as under gdbserver", ref_server.stdout,
            test_server.stdout)


if __name__ == "__main__":
    run_test("test_threads", main)
