#!/usr/bin/env python3
"""A file changed after a point never shows its new bytes at that point.

A private mapping's pages the program never wrote are the file's page
cache, in the program and in each checkpoint's copy alike: a copy re-run
in the past read the file as it is now. file_changed.c (O0, O2) maps three
files holding "AAAA" (MAP_PRIVATE, read-only): a file, a memfd (whose
name cannot be asked: only /proc/PID/map_files can), and a tmpfs file it
also maps shared and writable (a store there leaves the ctime alone);
reads a[] = 'A' from each, calls mark1(), changes each file to "BBBB",
reads b[] = 'B' (as natively), calls mark2(). Under `btstub --record`,
from mark2 (live: b is "BBB") back at mark1 by reverse-continue, a[] and
each mapped byte must be 65 or unavailable, never 66 (before: 66, from a
copy); `monitor replay status` names a file; the program then runs to
its end and prints "a=AAA b=BBB".

    python3 test_past_file_changed.py [-v]
"""

import os
import re
import tempfile

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break mark1", "break mark2", "continue", "continue",  # 0-3: mark1, mark2 (live)
    "print b", "set $pages = {page, memfd_page, tmpfs_page}",  # 4-5
    "reverse-continue",                                       # 6: back at mark1
    "print a", "monitor replay status",                       # 7-8
    "print $pages[0][0]", "print $pages[1][0]", "print $pages[2][0]",  # 9-11
    "delete", "continue", "continue",                         # 12-14: live end, the end
]


def value_or_unavailable(text, expected):
    """True when gdb printed `expected` or said the value is unknown."""
    if re.search(r"^\$\d+ = %s" % re.escape(expected), text, re.M):
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
            tmpfs_path = "/dev/shm/btstub-file-changed-%d-%s" % (os.getpid(), opt)
            result, server = run_gdb_tcp("btstub", prog, [path, tmpfs_path], COMMANDS,
                                         options=("--once", "--record"))
            ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
            c.contains("%s: live at mark2, b" % opt, result.of(4), '"BBB"', ctx)
            c.matches("%s: back at mark1" % opt, result.of(6), r"Breakpoint 1, mark1", ctx)
            c.true("%s: in the past, a[] is what was read or unavailable" % opt,
                   value_or_unavailable(result.of(7), '"AAA"'), ctx)
            c.contains("%s: replay status names a file" % opt, result.of(8), "changed since the checkpoint", ctx)
            for i, what in enumerate(("the file's", "the memfd's", "the tmpfs file's")):
                c.true("%s: in the past, %s mapped byte is 65 or unavailable" % (opt, what),
                       value_or_unavailable(result.of(9 + i), "65"), ctx)
            c.contains("%s: the program ends as natively" % opt, server.stdout, "a=AAA b=BBB", ctx)


if __name__ == "__main__":
    run_test("test_past_file_changed", main)
