#!/usr/bin/env python3
"""`monitor record size BYTES` changes the history bound of a running
recording: a user who finds the history too short need not restart.

Under `btstub --record --trace-size=64k` (2,730 branches per thread),
stopped at the 4th call of depth() in reverse_walk.c (the history is full
by then: older branches dropped):
- a larger size keeps every branch held and raises the bound
  (`monitor record status`), and the next stretch of the run is kept
  whole: none dropped while the ring had room;
- a smaller one keeps the newest that fit;
- bad sizes get a clear message and change nothing;
- while a thread replays, resizing is refused (it would move the thread
  under gdb's feet), and gdb's view of the past stays as it was.

Runs against btstub only (gdbserver has no --record).

    python3 test_monitor_record_size.py [-v]
"""

import re
import shlex

from harness import program, run_gdb, run_test, server_path

STATUS = re.compile(r"thread \d+: (\d+) of (\d+) branches in \d+ bytes(?:, (\d+) older dropped)?")


def status(text):
    m = STATUS.search(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub has --record (skipped for %s)" % args.server, True)
        return
    prog = program("reverse_walk")
    target = "| " + shlex.join([server_path("btstub"), "--record", "--trace-size=64k", "-", prog])
    commands = ["break report", "continue", "monitor record status",
                "monitor record size 1m", "monitor record status",
                "monitor record size 48", "monitor record status",
                "monitor record size lots", "monitor record size 0", "monitor record status",
                "monitor record size 4m", "reverse-stepi", "info registers rip", "monitor record size 8m",
                "info registers rip", "monitor record status", "stepi", "monitor record size 8m",
                "monitor record status"]
    r = run_gdb(commands, prog, target, timeout=120)
    ctx = r.transcript()
    start = status(r.of(2))
    c.true("the history is full at report()", start is not None and start[0] == start[1] == 2730 and start[2] > 0, ctx)
    grown = status(r.of(4))
    c.contains("size 1m: the new bound is said", r.of(3), "1048576-byte buffers (43690 branches)", ctx)
    c.true("size 1m: every branch held stays, the bound grows",
           grown is not None and start is not None and grown == (start[0], 43690, start[2]), ctx)
    shrunk = status(r.of(6))
    c.true("size 48: the newest two branches stay", shrunk is not None and shrunk[:2] == (2, 2) and
           start is not None and shrunk[2] == start[2] + start[0] - 2, ctx)
    c.contains("a bad size is refused", r.of(7), "Bad size 'lots': expected a number of bytes", ctx)
    c.contains("a size under one branch is refused", r.of(8), "Bad size '0': at least 24 bytes", ctx)
    c.equal("refused sizes change nothing", shrunk, status(r.of(9)), ctx)
    rip_before = re.search(r"0x[0-9a-f]+", r.of(12))
    c.contains("while replaying, resizing is refused", r.of(13), "Cannot resize while replaying", ctx)
    c.true("gdb still stands where reverse-stepi took it",
           rip_before is not None and rip_before.group(0) in r.of(14), ctx)
    c.equal("the refused resize kept the bound", 4194304 // 24, (status(r.of(15)) or (0, 0, 0))[1], ctx)
    c.contains("live again, resizing works", r.of(17), "8388608-byte buffers (349525 branches)", ctx)


if __name__ == "__main__":
    run_test("test_monitor_record_size", main)
