#!/usr/bin/env python3
"""History latency benchmark (not a test): do answers in the past slow down
as the history grows? Real gdb against `btstub --record`, on record_bench's
workload (tests/programs/record_workload.c -O2: ~133 taken branches a
round, calls, loops and data-dependent branches; ROUNDS rounds between
bench_begin and bench_end).

For each history length N (branches; ROUNDS = N / 133), gdb stops at
bench_end with the whole run recorded (`--trace-size` large enough to keep
it all), then times, each on its own inside gdb (`time.perf_counter`
around `gdb.execute`):
  reverse-step (x2: back into the last round_work() call), bt,
  reverse-next (x3), reverse-stepi (x3) each followed by `info registers
  rax`, bt, reverse-finish, bt
and prints one row per length: the first of each kind and the median of
the repeats. The history length comes from `monitor record status`.
--thread: the program keeps a second thread waiting meanwhile, so btstub
has no copies of it and reads the past from the history alone (registers
other than rip/rsp/rbp are unavailable then; `info registers rax` is
still timed).

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/history_latency_bench.py [--lengths 1e3,1e5,1e6,1e7] [--thread]
"""

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness  # noqa: E402

BRANCHES_PER_ROUND = 133

SCRIPT = r'''
import gdb, time
def timed(cmd):
    a = time.perf_counter()
    out = gdb.execute(cmd, to_string=True)
    ms = (time.perf_counter() - a) * 1000
    print("TIMED %s|%.2f|%s" % (cmd, ms, " ".join(out.split())[:120]))
gdb.execute("break bench_end")
timed("continue")
print("STATUS " + " ".join(gdb.execute("monitor record status", to_string=True).split()))
gdb.execute("delete")
for cmd in ["reverse-step", "reverse-step", "bt",
            "reverse-next", "info registers rax", "reverse-next", "info registers rax",
            "reverse-next", "info registers rax",
            "reverse-stepi", "info registers rax", "reverse-stepi", "info registers rax",
            "reverse-stepi", "info registers rax", "bt", "reverse-finish", "bt"]:
    timed(cmd)
'''


def run(length, thread):
    rounds = max(1, int(length) // BRANCHES_PER_ROUND)
    prog = harness.program("record_workload", "O2")
    size = max(64 * 1024, int(length * 1.2) * 24)
    target = "| " + shlex.join([harness.server_path("btstub"), "--record", "--trace-size=%d" % size,
                                "-", prog, str(rounds)] + (["thread"] if thread else []))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(SCRIPT)
        script = f.name
    try:
        r = harness.run_gdb(["source " + script], prog, target, timeout=3600, markers=False)
    finally:
        os.unlink(script)
    status = re.search(r"thread \d+: (\d+) of", r.output)
    times = {}
    for m in re.finditer(r"TIMED ([^|]+)\|([\d.]+)\|", r.output):
        times.setdefault(m.group(1), []).append(float(m.group(2)))
    if not status or len(times) < 6:
        print(r.output, file=sys.stderr)
    return (int(status.group(1)) if status else 0), times


def fmt(values, first=False):
    if not values:
        return "?"
    return "%.1f" % (values[0] if first else statistics.median(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="1e3,1e5,1e6,1e7")
    ap.add_argument("--thread", action="store_true")
    args = ap.parse_args()
    print("| history (branches held) | continue recording it (s) | reverse-step, 1st / 2nd (ms) | bt, 1st (ms) | reverse-next, median of 3 (ms) "
          "| reverse-stepi, median of 3 (ms) | info registers rax, median of 6 (ms) | bt after (ms) "
          "| reverse-finish (ms) | bt last (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for text in args.lengths.split(","):
        held, t = run(float(text), args.thread)
        rs = t.get("reverse-step", [])
        bts = t.get("bt", [])
        recording = t.get("continue", [])
        print("| {:,} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} |".format(
            held, "%.2f" % (recording[0] / 1000) if recording else "?", fmt(rs[:1]), fmt(rs[1:2]), fmt(bts[:1]), fmt(t.get("reverse-next")),
            fmt(t.get("reverse-stepi")), fmt(t.get("info registers rax")), fmt(bts[1:2]),
            fmt(t.get("reverse-finish")), fmt(bts[2:3])), flush=True)


if __name__ == "__main__":
    main()
