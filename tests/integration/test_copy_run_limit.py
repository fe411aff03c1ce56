#!/usr/bin/env python3
"""A copy that goes another way than the recording is given up, not waited
for without end.

shared_wait.c (O0, O2) spins until a forked child writes 42 into shared
memory, then calls arrived(). The checkpoint nearest before arrived() was
taken inside the loop, before the child's write: its copy holds the page
as it was then (a checkpoint makes shared memory private) and never leaves
the loop (unless the child wrote while the program stood still for that
checkpoint: then its snapshot holds 42 and the copy arrives). Under `btstub --record`: break on arrived() and on the final
printf, run to the printf, reverse-continue to arrived(). Reading the
argument there re-runs that copy: btstub kills it after a second without a
stop and answers what the history determines (before, the read never
returned: gdb, btstub and the spinning copy stayed until killed). `monitor
replay status` says why; `continue` goes back to the live end, the next
one runs the program to its end, which prints what it prints natively.

    python3 test_copy_run_limit.py [-v]
"""

import re
import time

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break arrived", "break printf", "continue", "continue",   # 0-3: arrived, printf (live)
    "reverse-continue",                                       # 4: back at arrived
    "print seen", "monitor replay status",                    # 5-6
    "delete", "continue",                                     # 7-8: to the live end
    "continue",                                               # 9: the program's end
]


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    for opt in ("O0", "O2"):
        prog = program("shared_wait", opt)
        began = time.monotonic()
        result, server = run_gdb_tcp("btstub", prog, [], COMMANDS, options=("--once", "--record"), timeout=120)
        took = time.monotonic() - began
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.true("%s: the session ended by itself (took %.1f s)" % (opt, took), result.status is not None, ctx)
        c.matches("%s: live at arrived" % opt, result.of(2), r"Breakpoint 1, arrived \(seen=(seen@entry=)?42\)", ctx)
        c.matches("%s: back at arrived" % opt, result.of(4), r"Breakpoint 1, arrived \(seen=", ctx)
        c.true("%s: the argument there is 42 or unavailable, never another value" % opt,
               re.search(r"^\$\d+ = 42$", result.of(5), re.M) is not None or
               "<unavailable>" in result.of(5) or "Cannot access memory" in result.of(5) or
               "not available" in result.of(5), ctx)
        # Whether the nearest checkpoint's copy holds the page before the
        # child's write depends on timing: the child may write while the
        # program stands still for that checkpoint (its snapshot then has
        # 42, and the copy arrives). Either way is right; the limit itself
        # is tested in tests/stub/test_wait_with_limit.cc.
        gave_up = "went another way than the recording" in result.of(6)
        arrived = "from a copy of the program" in result.of(6) and \
            re.search(r"^\$\d+ = 42$", result.of(5), re.M) is not None
        c.true("%s: replay status says the copy went another way, or it arrived with 42" % opt,
               gave_up or arrived, ctx)
        print("NOTE %s: the copy %s" % (opt, "was given up" if gave_up else "arrived"))
        c.contains("%s: the program ends as natively" % opt, server.stdout, "seen 42, after 84", ctx)


if __name__ == "__main__":
    run_test("test_copy_run_limit", main)
