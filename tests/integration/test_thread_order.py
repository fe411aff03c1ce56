#!/usr/bin/env python3
"""Thread numbers after tids wrapped: a gdb that connects to a program
whose threads exist already numbers them in the order the server lists
them (qfThreadInfo), and gdbserver lists them in the order they were
created. The program (tests/programs/threads.c: main + 3 workers) runs in
a pid namespace of its own whose last pid is set just below pid_max, so
the main thread gets the largest tid and its workers wrap around to small
ones. A server without --once; gdb 1 runs to all_started (every thread
exists) and disconnects; gdb 2 connects: its current thread, `info
threads` (main is thread 1, the workers 2-4 in their order of creation),
`thread 1`, `thread 3`, and the program's end. Under gdbserver (the
reference) and the server under test the normalised transcripts must be
identical.

The run must really have wrapped (a worker's tid below the main thread's),
or the test would prove nothing.

    python3 test_thread_order.py [--server gdbserver] [-v]
"""

import os
import re

import harness
from harness import Server, check_same_transcript, program, run_gdb, run_test, server_path

FIRST = ["break all_started", "continue", "disconnect"]
SECOND = [
    "thread",
    "info threads",
    "thread 1",
    "bt 1",
    "thread 3",
    "print $_thread",
    "continue",
]

# Run as pid 1 of a new pid namespace (with a /proc of its own, which the
# server reads its program's threads from): set the namespace's last pid
# just below its pid_max, then become the server. The program then gets
# pid_max - 1 and the tids of the threads it creates wrap around. $1: how
# many processes the server starts before its program (gdbserver's ptrace
# feature checks fork twice; btstub starts none).
NAMESPACE_SCRIPT = (
    'echo $(( $(cat /proc/sys/kernel/pid_max) - 2 - $1 )) > /proc/sys/kernel/ns_last_pid'
    ' && shift && exec "$@"')
FORKS_BEFORE_PROGRAM = {"gdbserver": 2}


def wrapped_server(kind, prog):
    """A server of `kind` without --once, in a pid namespace of its own."""
    argv = ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
            NAMESPACE_SCRIPT, "sh", str(FORKS_BEFORE_PROGRAM.get(kind, 0)),
            server_path(kind), "127.0.0.1:0", prog]
    return Server(kind, [prog], argv=argv)


def thread_tids(transcript):
    """{thread name: tid} of the rows of `info threads`."""
    rows = re.findall(r'Thread \d+\.(\d+) "([^"]+)"', transcript)
    return {name: int(tid) for tid, name in rows}


def two_clients(kind, prog):
    with wrapped_server(kind, prog) as server:
        run_gdb(FIRST, prog, server.address)
        second = run_gdb(SECOND, prog, server.address)
        server.wait_exit(10.0)
    if harness.VERBOSE:
        print(second.transcript())
    return second


def main(args, c):
    prog = program("threads")
    runs = {kind: two_clients(kind, prog) for kind in ("gdbserver", args.server)}
    ref, test = runs["gdbserver"], runs[args.server]
    c.contains("reference run reached the exit", ref.of(-1), "exited normally",
               ref.transcript())
    for kind, run in runs.items():
        tids = thread_tids(run.of(1))
        c.equal("%s: four threads listed" % kind, len(tids), 4, run.of(1))
        main_tid = tids.pop(os.path.basename(prog)[:15], None)
        c.true("%s: tids wrapped, a worker's tid is below the main thread's" % kind,
               main_tid is not None and tids and min(tids.values()) < main_tid,
               run.of(1))
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server)


if __name__ == "__main__":
    run_test("test_thread_order", main)
