#!/usr/bin/env python3
"""A mapping that changed after a point is not read from the present there.

Where btstub reads the past from the history alone (here: btstub runs with
`--checkpoint-memory=0`: no checkpoints; a second thread waits meanwhile),
a byte the history does not determine
comes from the live program where the mapping holds code or a file's
unwritten bytes. Three changes after mark1 leave such a present that is
not what mark1 saw (remapped_later.c, O0 and O2): another file mapped
where the first was (munmap, mmap MAP_FIXED), a private file page written
before mark1 then dropped (MADV_DONTNEED: the file's bytes again) and made
read-only, and an executable mapping made writable, patched and made
executable again. btstub notes each mmap, munmap, mprotect, madvise and
mremap the recorded program makes (stub/tracing/map_changes.h). Stopped
live at mark1, then at mark2, then back at mark1 by reverse-continue: the
three must be unavailable ("Cannot access memory"; before: the present's
"second file", "file bytes" and "patched code"), while a file mapped
before mark1 and left alone reads as it did live, and so does the code at
the pc (`x/i $pc`; a failed write(999, ...) after mark1 made every address
unknown before the write's result was looked at).

    python3 test_past_remapped.py [-v]
"""

import os
import re
import tempfile
import time

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break mark1", "break mark2", "continue",                    # 0-2: mark1, live
    "x/s swapped", "x/s dropped", "x/s code", "x/s kept",        # 3-6
    "set $s = swapped", "set $d = dropped", "set $c = code", "set $k = kept",
    "continue",                                                   # 11: mark2, live
    "x/s $s", "x/s $d", "x/s $c", "x/s $k",                       # 12-15
    "reverse-continue",                                           # 16: mark1, in the past
    "x/s $s", "x/s $d", "x/s $c", "x/s $k", "x/i $pc",            # 17-21
    "monitor replay status",                                      # 22
]

CONTENTS = ("first file", "second file", "file bytes", "kept file")


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    with tempfile.TemporaryDirectory(prefix="btstub-remapped-") as scratch:
        files = []
        for i, text in enumerate(CONTENTS):
            path = os.path.join(scratch, "file%d" % i)
            with open(path, "wb") as f:
                f.write(text.encode() + b"\0" * (4096 - len(text)))
            files.append(path)
        # Older than the program: a file changed since it started is
        # never read from the present (test_past_file_changed).
        time.sleep(0.1)
        for opt in ("O0", "O2"):
            prog = program("remapped_later", opt)
            result, server = run_gdb_tcp("btstub", prog, files, COMMANDS,
                                         options=("--once", "--record", "--checkpoint-memory=0"))
            ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
            live1 = ['"first file"', '"written before mark1"', '"file bytes"', '"kept file"']
            live2 = ['"second file"', '"file bytes"', '"patched code"', '"kept file"']
            names = ("swapped", "dropped", "code", "kept")
            for i, name in enumerate(names):
                c.contains("%s: live at mark1, %s" % (opt, name), result.of(3 + i), live1[i], ctx)
                c.contains("%s: live at mark2, %s" % (opt, name), result.of(12 + i), live2[i], ctx)
            c.matches("%s: back at mark1" % opt, result.of(16), r"Breakpoint 1, mark1", ctx)
            c.true("%s: the history alone answers (no copy)" % opt, "from a copy" not in result.of(22), ctx)
            for i, name in enumerate(names[:3]):
                c.contains("%s: in the past, %s (changed since) is unavailable" % (opt, name),
                           result.of(17 + i), "Cannot access memory", ctx)
            c.contains("%s: in the past, the file left alone reads as live" % opt, result.of(20),
                       '"kept file"', ctx)
            code = re.search(r"=> 0x[0-9a-f]+ <mark1(\+\d+)?>:", result.of(21))
            c.true("%s: in the past, the code at the pc reads" % opt, code is not None, ctx)


if __name__ == "__main__":
    run_test("test_past_remapped", main)
