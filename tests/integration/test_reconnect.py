#!/usr/bin/env python3
"""A server without --once, gdb's `disconnect` while the program is stopped,
and a second gdb connecting: it finds the program as the first left it.

gdbserver keeps the program over a lost connection (server.cc: "GDBserver
will reopen the connection") and answers the next gdb's `?` with the thread
that last reported a stop (handle_status prefers last_ptid and makes it the
general thread), so gdb selects that thread again. Compared with gdbserver
(the reference), on tests/programs/threads.c: gdb 1 stops worker-1 at a
breakpoint and disconnects; gdb 2 connects, shows the current thread, the
threads and the frame, and continues to the program's exit. Both gdb
transcripts (normalised) and the program's output must be identical.

A `record btrace` recording over the reconnection (btstub only): gdb does
not stop a recording when it disconnects (record_btrace_target::disconnect:
"Do not stop recording, just clean up GDB side"), and on connecting it asks
every thread's qXfer:btrace-conf:read (remote_btrace_maybe_reopen), pushes
record-btrace for a thread that is still recording and says "Target is
recording using Branch Trace Store.". gdbserver would answer from the same
per-thread state it kept, but it cannot record on this machine (no BTS/PT
hardware), so that part is checked against gdb's expected output written
out here: gdb 2's `info record` shows the recording with the two
instructions gdb 1 stepped, and reverse-stepi goes back through them.
Against gdbserver that part says SKIP.

And `kill` without --once: gdbserver exits; btstub (deliberately, unlike
gdbserver) kills and reaps the program, starts a fresh copy and serves it
to the next gdb, which runs it to its end.

    python3 test_reconnect.py [--server gdbserver] [-v]
"""

import harness
from harness import (Server, check_same_transcript, pid_alive, program, run_gdb, run_test,
                     source_line, wait_until)

FIRST = ["break work", "continue", "thread", "disconnect"]
SECOND = ["thread", "info threads", "bt 1", "info record", "continue"]

RECORD_FIRST = ["break work", "continue", "record btrace bts", "stepi", "stepi",
                "info record", "disconnect"]
RECORD_SECOND = ["thread", "info record", "reverse-stepi", "reverse-stepi",
                 "info record", "record stop", "continue"]


def two_clients(kind, prog, first, second):
    """gdb `first` (ending in disconnect), then gdb `second`, on one server."""
    with Server(kind, [prog], options=()) as server:
        r1 = run_gdb(first, prog, server.address)
        r2 = run_gdb(second, prog, server.address)
        server.wait_exit(10.0)
    if harness.VERBOSE:
        print(r1.transcript() + r2.transcript())
    return r1, r2, server


def check_selected_thread(kind, prog, c):
    ref1, ref2, ref_server = two_clients("gdbserver", prog, FIRST, SECOND)
    test1, test2, test_server = two_clients(kind, prog, FIRST, SECOND)
    c.contains("reference: gdbserver's second gdb is on worker-1",
               ref2.of_command("thread"), "[Current thread is 2 ",
               ref2.transcript())
    for label, ref, test in (("first gdb", ref1, test1),
                             ("second gdb", ref2, test2)):
        check_same_transcript(c, "%s: same transcript as gdbserver" % label, ref, test, kind)
    c.equal("same program output as under gdbserver", ref_server.stdout,
            test_server.stdout)


def check_recording_kept(kind, prog, c):
    if kind == "gdbserver":
        print("SKIP record btrace over a reconnection: gdbserver cannot "
              "record branches on this machine (no BTS/PT hardware)")
        return
    r1, r2, _ = two_clients(kind, prog, RECORD_FIRST, RECORD_SECOND)
    recorded = "Recorded 2 instructions in 1 functions (0 gaps) for thread 2 "
    c.contains("first gdb records two instructions",
               r1.of_command("info record"), recorded, r1.transcript())
    c.contains("second gdb is told the target records",
               r2.preamble, "Target is recording using Branch Trace Store.\n",
               r2.transcript())
    c.contains("second gdb is on the recording thread",
               r2.of_command("thread"), "[Current thread is 2 ",
               r2.transcript())
    info = r2.of_command("info record")
    for line in ("Active record target: record-btrace\n",
                 "Recording format: Branch Trace Store.\n",
                 "Buffer size: 64kB.\n", recorded):
        c.contains("second gdb's info record: %s" % line.strip(), info, line,
                   r2.transcript())
    # Back through the two recorded steps: where the first gdb's steps began.
    c.equal("reverse-stepi retraces the first gdb's stepi",
            r1.of_command("stepi").split("\t", 1)[-1],
            r2.of_command("reverse-stepi").split("\t", 1)[-1], r2.transcript())
    c.equal("second reverse-stepi is back at the breakpoint (line start)",
            source_line("threads.c", "work_body"),
            r2.of_command("reverse-stepi", 1).strip("\n"), r2.transcript())
    c.contains("replaying: info record says so",
               r2.of_command("info record", 1), "Replay in progress.",
               r2.transcript())
    c.contains("the program then runs to its end",
               r2.of_command("continue"), "exited normally", r2.transcript())


def check_kill_then_next_client(kind, prog, c):
    """`kill` under plain `target remote` without --once. gdbserver exits
    (server.cc: 'k' sets exit_requested; after vKill, captured_main exits
    once the client is gone and no program is left). btstub, deliberately
    (stub/server/server.cc), kills and reaps the program and starts a fresh
    copy for the next client, which runs it to its end."""
    with Server(kind, [prog], options=()) as server:
        first_pid = server.inferior_pid
        r1 = run_gdb(["break work", "continue", "kill"], prog, server.address)
        if kind == "gdbserver":
            c.equal("gdbserver exits after kill (the reference's way)", 0,
                    server.wait_exit(10.0), server.stderr)
            return
        created = server.wait_stderr(r"^Process .* created; pid = (?!%d$)(\d+)$" % first_pid)
        c.true("killed program is gone", wait_until(lambda: not pid_alive(first_pid), 5),
               r1.transcript())
        c.true("btstub starts a fresh copy of the program after kill", created is not None,
               server.stderr)
        if created is None:
            return
        second_pid = int(created.group(1))
        r2 = run_gdb(["info inferiors", "continue"], prog, server.address)
        c.contains("the next client has the fresh copy", r2.of_command("info inferiors"),
                   "process %d" % second_pid, r2.transcript())
        c.contains("the fresh copy runs to its end", r2.of_command("continue"),
                   "exited normally", r2.transcript())
        c.equal("btstub still serves (no --once)", None, server.wait_exit(0.5), server.stderr)


def main(args, c):
    prog = program("threads")
    check_selected_thread(args.server, prog, c)
    check_recording_kept(args.server, prog, c)
    check_kill_then_next_client(args.server, prog, c)


if __name__ == "__main__":
    run_test("test_reconnect", main)
