#!/usr/bin/env python3
"""Memory that is read-only now is not taken as the past's where it may
have changed.

Where btstub reads the past from the history alone (here: btstub runs with
`--checkpoint-memory=0`: no checkpoints; a second thread waits meanwhile),
a byte the history does not determine
came from the live program when its mapping was read-only, as if read-only
now meant unchanged since. readonly_later.c (O0, O2) writes an anonymous
page and makes it read-only after mark1, and maps, writes and protects a
page at a fixed address that did not exist at mark1. Under `btstub
--record`, stopped at mark2 (live: page[0] is 2, the fixed page holds its
string) and back at mark1 by reverse-continue: page[0] and the fixed page
must be unavailable ("Cannot access memory"; before: 2 and the string, the
present's), while a string in .rodata (a file's page nobody wrote) still
reads as it does live, and so does the code (`x/i $pc`).

    python3 test_past_readonly.py [-v]
"""

import re

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break mark1", "break mark2", "continue",              # 0-2: mark1, live
    "print page[0]", "x/s greeting", "set $page = page", "set $greeting = greeting",
    "continue",                                             # 7: mark2, live
    "print page[0]", "x/s 0x200000000",
    "reverse-continue",                                     # 10: mark1, in the past
    "print $page[0]", "x/s 0x200000000", "x/s $greeting", "x/i $pc",
    "monitor replay status",
]


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    for opt in ("O0", "O2"):
        prog = program("readonly_later", opt)
        result, server = run_gdb_tcp("btstub", prog, [], COMMANDS, options=("--once", "--record", "--checkpoint-memory=0"))
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.contains("%s: live at mark1, page[0]" % opt, result.of(3), "= 1", ctx)
        c.contains("%s: live at mark1, .rodata" % opt, result.of(4), '"hello from rodata"', ctx)
        c.contains("%s: live at mark2, page[0]" % opt, result.of(8), "= 2", ctx)
        c.contains("%s: live at mark2, the page mapped since" % opt, result.of(9), '"written after mark1"', ctx)
        c.matches("%s: back at mark1" % opt, result.of(10), r"Breakpoint 1, mark1", ctx)
        c.true("%s: the history alone answers (no copy)" % opt, "from a copy" not in result.of(15), ctx)
        c.contains("%s: in the past, page[0] (read-only only since) is unavailable" % opt, result.of(11),
                   "Cannot access memory", ctx)
        c.contains("%s: in the past, the page mapped since is unavailable" % opt, result.of(12),
                   "Cannot access memory", ctx)
        c.contains("%s: in the past, .rodata reads as live" % opt, result.of(13), '"hello from rodata"', ctx)
        code = re.search(r"=> 0x[0-9a-f]+ <mark1(\+\d+)?>:", result.of(14))
        c.true("%s: in the past, the code reads" % opt, code is not None, ctx)


if __name__ == "__main__":
    run_test("test_past_readonly", main)
