#!/usr/bin/env python3
"""Judges a gdb.sum from tests/gdbsuite/run.sh against a list of known
results: fails on any FAIL, XPASS, UNRESOLVED or ERROR the list does not
name, on a run that did not end, and on fewer PASSes than the list's floor
(whole files lost without a FAIL). A known result that did not occur is
reported, so the list can shrink, but is no failure.

  check.py GDB.SUM KNOWN.TXT

KNOWN.TXT: one result per line as gdb.sum prints it ("FAIL: gdb.server/x.exp:
name"), `min-pass N`, blank lines and # comments. A trailing " (timeout)" or
" (the program ...)" is ignored on both sides, as is the line's status for
FAIL/UNRESOLVED (a known failure may time out one day and fail the next).
"""
import re
import sys
from collections import Counter

BAD = ("FAIL", "XPASS", "UNRESOLVED", "ERROR")
LINE = re.compile(r"^(PASS|FAIL|XFAIL|KFAIL|XPASS|KPASS|UNRESOLVED|UNSUPPORTED|UNTESTED|ERROR): (.*)$")
SUFFIX = re.compile(r" \((timeout|the program .*|GDB internal error|PRMS.*)\)$")


def key(status, name):
    name = SUFFIX.sub("", name.strip())
    return ("FAIL" if status in ("FAIL", "UNRESOLVED") else status), name


def load_known(path):
    known, floor = Counter(), 0
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("min-pass "):
            floor = int(line.split()[1])
            continue
        m = LINE.match(line)
        if not m:
            sys.exit(f"check.py: {path}: not a result line: {line!r}")
        known[key(*m.groups())] += 1
    return known, floor


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    summary, known_path = sys.argv[1], sys.argv[2]
    known, floor = load_known(known_path)
    counts, bad, unfinished = Counter(), Counter(), False
    try:
        lines = open(summary, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as e:
        print(f"gdbsuite check: cannot read {summary}: {e}")
        return 1
    for line in lines:
        if line.startswith("gdbsuite: runtest did not end"):
            unfinished = True
        m = LINE.match(line)
        if not m:
            continue
        status, name = m.groups()
        counts[status] += 1
        if status in BAD:
            bad[key(status, name)] += 1
    unexpected = bad - known
    gone = known - bad
    print(f"gdbsuite check {summary}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for (status, name), n in sorted(unexpected.items()):
        print(f"  NEW {status}: {name}" + (f" (x{n})" if n > 1 else ""))
    for (status, name), n in sorted(gone.items()):
        print(f"  no longer {status} (remove it from {known_path}): {name}")
    failed = False
    if unfinished:
        print("  the run did not end in time")
        failed = True
    if counts["PASS"] < floor:
        print(f"  {counts['PASS']} PASS, fewer than the {floor} of {known_path}: tests were lost")
        failed = True
    if unexpected:
        failed = True
    print("  " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
