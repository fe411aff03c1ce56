#!/usr/bin/env python3
"""Trace memory benchmark (not a test): what a thread's branch history
costs btstub in memory, per recorded branch and before anything is
recorded, for one or two btstub binaries side by side.

Memory is btstub's own anonymous resident memory (RssAnon in
/proc/PID/status; the copies checkpoints hold are other processes),
read from inside gdb at each point.

  grow     `btstub --record --trace-size=256m`, gdb stops at bench_begin and
           at bench_end; the growth of RssAnon and of the branches held
           (`monitor record status`) between the two, and the store's own
           count of its bytes where the binary reports it. Programs:
             workload  tests/programs/record_workload.c -O2 (record_bench.py's)
             loop      tests/programs/bench_checkpoints.c -O2, no system call
  idle     What a bound costs before a branch is recorded: stopped at main
           without --record, RssAnon before and after
             start-256m  `monitor record start` under --trace-size=256m
             unlimited   gdb's `set record btrace bts buffer-size unlimited`
                         and `record btrace bts`

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/trace_memory_bench.py [--base OTHER_BTSTUB] [--rounds 2000]
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness  # noqa: E402

# Sourced into gdb: `rss` prints the RssAnon (KiB) of the btstub process
# gdb started (a descendant of gdb's).
RSS_COMMAND = r'''
import os
def _parent(pid):
    try:
        stat = open("/proc/%d/stat" % pid).read()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2:].split()[1])
class Rss(gdb.Command):
    def __init__(self):
        super().__init__("rss", gdb.COMMAND_USER)
    def invoke(self, arg, from_tty):
        me = os.getpid()
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                exe = os.path.basename(os.readlink("/proc/%s/exe" % p))
            except OSError:
                continue
            if exe != "btstub":
                continue
            up = int(p)
            while up > 1 and up != me:
                up = _parent(up)
            if up != me:
                continue
            for line in open("/proc/%s/status" % p):
                if line.startswith("RssAnon:"):
                    print("RSSANON %s" % line.split()[1])
Rss()
'''

STATUS = re.compile(r"thread \d+: (\d+) of \d+ branches(?: in (\d+) bytes)?")


def rss(text):
    m = re.search(r"RSSANON (\d+)", text or "")
    return int(m.group(1)) if m else None


def held(text):
    m = STATUS.search(text or "")
    if not m:
        return None, None
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)


def run(btstub, prog, args, options, commands, script):
    target = "| " + shlex.join([btstub] + options + ["-", prog] + args)
    return harness.run_gdb(["source " + script] + commands, prog, target, timeout=600)


def grow(btstub, name, prog, args, script, options=()):
    r = run(btstub, prog, args, ["--record", "--trace-size=256m"] + list(options),
            ["break bench_begin", "break bench_end", "continue", "rss", "monitor record status",
             "continue", "rss", "monitor record status"], script)
    b0, s0 = held(r.of(5))
    b1, s1 = held(r.of(8))
    r0, r1 = rss(r.of(4)), rss(r.of(7))
    if None in (b0, b1, r0, r1):
        print(r.transcript(), file=sys.stderr)
        return [name, "?"] + ["?"] * 5
    branches = b1 - b0
    rss_growth = (r1 - r0) * 1024
    store = "%.2f" % ((s1 - s0) / branches) if s0 is not None and s1 is not None else "-"
    return [name, "%d" % b1, "%d" % branches, "%d" % (rss_growth // 1024),
            "%.2f" % (rss_growth / branches), store]


def idle(btstub, prog, script):
    r = run(btstub, prog, ["1", "1", "0"], ["--trace-size=256m"],
            ["break main", "continue", "rss", "monitor record start", "rss"], script)
    start = (rss(r.of(3)), rss(r.of(5)))
    r = run(btstub, prog, ["1", "1", "0"], [],
            ["break main", "continue", "rss", "set record btrace bts buffer-size unlimited",
             "record btrace bts", "rss", "info record"], script)
    unlimited = (rss(r.of(3)), rss(r.of(6)))
    size = re.search(r"Buffer size: (\S+)", r.of(7) or "")
    rows = []
    for name, (a, b), note in (("start-256m", start, "--trace-size=256m"),
                               ("unlimited", unlimited, size.group(1) if size else "?")):
        rows.append([name, note, "%s" % a, "%s" % b, "%s" % (b - a if None not in (a, b) else "?")])
    return rows


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="a second btstub binary to measure side by side")
    ap.add_argument("--rounds", type=int, default=2000)
    args = ap.parse_args()
    binaries = [("this", harness.server_path("btstub"))]
    if args.base:
        binaries.append(("base", args.base))
    workload = harness.program("record_workload", "O2")
    loop = harness.program("bench_checkpoints", "O2")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RSS_COMMAND)
        script = f.name
    try:
        grow_rows, idle_rows = [], []
        for label, btstub in binaries:
            for name, prog, pargs in (("workload", workload, [str(args.rounds)]),
                                      ("loop", loop, [str(args.rounds // 10), "1000", "0"])):
                grow_rows.append([label] + grow(btstub, name, prog, pargs, script))
                grow_rows.append([label] + grow(btstub, name + ", --checkpoint-memory=0", prog, pargs, script,
                                                ["--checkpoint-memory=0"]))
            for row in idle(btstub, loop, script):
                idle_rows.append([label] + row)
    finally:
        os.unlink(script)
    table(["btstub", "program", "branches held at bench_end", "branches recorded in the range",
           "RssAnon growth (KiB)", "RssAnon bytes per branch", "store bytes per branch"], grow_rows)
    print()
    table(["btstub", "setup", "size", "RssAnon before (KiB)", "after (KiB)", "growth (KiB)"], idle_rows)


if __name__ == "__main__":
    main()
