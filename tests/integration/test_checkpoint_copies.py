#!/usr/bin/env python3
"""A checkpoint's copy of the program holds the program's memory, not
btstub's: the translating tracer's code cache (anonymous mappings in the
program) and logs (a memfd the program and btstub both map, MAP_SHARED),
all madvise'd MADV_DONTFORK, are left out of every copy, so that a
checkpoint's fork copies none of their page tables and the program's
writes to its logs after it make no copy-on-write faults; and the logs,
shared memory though they are, are not made private in the copy as the
program's own shared memory is (1.5 MiB written into every copy).

past_hot_loop (O0) recorded by `btstub --record` (the translating tracer,
a checkpoint every 700 branches) stops at MARK done. From inside gdb, a
Python probe reads /proc/PID/maps of the program and of every other
process of the same executable whose parent is btstub (the copies): the
program must hold btstub's code cache (its anonymous executable mappings)
and a log (its memfd mapping; the program has no memfd of its own), at
least one copy must exist, and no copy may hold any of them. Then
`reverse-stepi` and `print` in the past still answer (a copy runs the
original code).

    python3 test_checkpoint_copies.py [-v]
"""

import os
import shlex
import tempfile

from harness import GDB_FIND_COPIES, marker_line, program, run_gdb, run_test, server_path

PROBE = GDB_FIND_COPIES + r'''
def maps(pid):
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi, parts[1], parts[5] if len(parts) > 5 else ""))
    return out
pid = gdb.selected_inferior().pid
copies = checkpoint_copies()
mine = maps(pid)
ours = [(lo, hi) for lo, hi, perms, path in mine if path == "" and "x" in perms]
logs = [(lo, hi) for lo, hi, perms, path in mine if path == "/memfd:" and "s" in perms]
print("PROBE btstub mappings in the program:", len(ours))
print("PROBE btstub logs in the program:", len(logs))
ours += logs
print("PROBE copies:", len(copies))
holding = 0
for copy in copies:
    theirs = maps(copy)
    holding += sum(1 for lo, hi in ours if any(a < hi and lo < b for a, b, _, _ in theirs))
print("PROBE copies holding btstub mappings:", holding)
'''


def probe_value(output, label):
    for line in output.splitlines():
        if line.startswith("PROBE " + label + ":"):
            return int(line.split(":")[1])
    return None


def main(args, c):
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return
    prog = program("past_hot_loop", "O0")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PROBE)
        probe = f.name
    try:
        target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
        r = run_gdb(["break %d" % marker_line("past_hot_loop.c", "done"), "continue", "source " + probe,
                     "reverse-stepi", "print b"], prog, target, timeout=120)
    finally:
        os.unlink(probe)
    out = r.of_command("source " + probe)
    c.true("the program holds btstub's code cache (anonymous executable mappings)",
           (probe_value(out, "btstub mappings in the program") or 0) >= 1, r.transcript())
    c.true("the program holds a log btstub shares (a memfd mapping)",
           (probe_value(out, "btstub logs in the program") or 0) >= 1, r.transcript())
    c.true("checkpoints were taken (copies of the program exist)", (probe_value(out, "copies") or 0) >= 1,
           r.transcript())
    c.equal("no copy holds btstub's mappings", 0, probe_value(out, "copies holding btstub mappings"),
            r.transcript())
    c.matches("print in the past answers", r.of_command("print b"), r"^\$\d+ = -?\d+", r.transcript())


if __name__ == "__main__":
    run_test("test_checkpoint_copies", main)
