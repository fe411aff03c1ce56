#!/usr/bin/env python3
"""A file changed after a point never shows its new bytes at that point.

A private mapping's pages the program never wrote are the file's page
cache, in the program and in each checkpoint's copy alike: a copy re-run
in the past read the file as it is now. file_changed.c (O0, O2) maps a
file holding "AAAA" (MAP_PRIVATE, read-only), reads a = 'A', calls mark1(),
pwrites "BBBB" over the file, reads b = 'B' (as natively), calls mark2().
Under `btstub --record`, from mark2 (live: b is 66) back at mark1 by
reverse-continue, `a` and the mapped byte must be 65 or unavailable, never
66 (before: both 66, from a copy); `monitor replay status` names the file;
the program then runs to its end and prints "a=A b=B".

    python3 test_past_file_changed.py [-v]
"""

import os
import re
import tempfile

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break mark1", "break mark2", "continue", "continue",  # 0-3: mark1, mark2 (live)
    "print b", "set $page = page",                         # 4-5
    "reverse-continue",                                    # 6: back at mark1
    "print a", "print $page[0]", "monitor replay status",  # 7-9
    "delete", "continue", "continue",                      # 10-12: live end, the end
]


def value_or_unavailable(text, expected):
    """True when gdb printed `expected` or said the value is unknown."""
    if re.search(r"^\$\d+ = %s\b" % re.escape(expected), text, re.M):
        return True
    return "Cannot access memory" in text or "<unavailable>" in text


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for opt in ("O0", "O2"):
            prog = program("file_changed", opt)
            path = os.path.join(tmp, "data-" + opt)
            result, server = run_gdb_tcp("btstub", prog, [path], COMMANDS, options=("--once", "--record"))
            ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
            c.matches("%s: live at mark2, b" % opt, result.of(4), r"= 66\b", ctx)
            c.matches("%s: back at mark1" % opt, result.of(6), r"Breakpoint 1, mark1", ctx)
            c.true("%s: in the past, a is 65 or unavailable" % opt, value_or_unavailable(result.of(7), "65"), ctx)
            c.true("%s: in the past, the mapped byte is 65 or unavailable" % opt,
                   value_or_unavailable(result.of(8), "65"), ctx)
            c.contains("%s: replay status names the file" % opt, result.of(9), path, ctx)
            c.contains("%s: the program ends as natively" % opt, server.stdout, "a=A b=B", ctx)


if __name__ == "__main__":
    run_test("test_past_file_changed", main)
