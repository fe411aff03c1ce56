#!/usr/bin/env python3
"""stepi benchmark (not a test): how long 1,500 single steps take through
gdbserver and through btstub, in one run.

For each server: start it on tests/programs/stepper.c (built as
PROGRAMS_DIR/stepper_O0), let gdb -batch run to step_loop, then time, inside
gdb with Python's perf_counter, only the stepping:

The server `gdb-floor` is no server: the session is recorded through btstub
(tests/bench/rsp_replay.py) and then replayed to gdb from the recording, so
its time is gdb's own work plus a Python loop answering packets. That loop
sleeps between packets as gdbserver does, so since btstub busy-polls
(--busy-poll) btstub can beat it: it bounds what a server that sleeps
could reach, not what btstub can.
`btstub-noahead` is btstub with --no-step-ahead: it steps only when gdb
asks, instead of running the next step while gdb works on the last one.
`btstub-nopoll` is btstub with --busy-poll=0: it sleeps as soon as it has
replied, as gdbserver does, instead of polling for gdb's next packet.

  count: one `stepi 1500` command
  loop:  1,500 separate `stepi` commands (gdb.execute from a Python loop),
         as a user or a front end would issue them

Each measurement is repeated (--repeat, default 5) and the median is shown,
as a markdown table, together with the exact command lines.

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/stepi_bench.py [--steps 1500] [--repeat 5]
        [--servers gdbserver,btstub] [--background-load]

--background-load runs a nice-19 busy loop on every CPU meanwhile, as a
build in the background would: polling for packets must then not cost
more than it saves.
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

TIMED = {
    "count": ["python import time; _t0 = time.perf_counter()",
              "stepi {steps}",
              "python print('BENCH_SECONDS %.6f' % (time.perf_counter() - _t0))"],
    "loop": ["python import time; _t0 = time.perf_counter()\n"
             "python [gdb.execute('stepi', to_string=True) for _ in range({steps})]",
             "python print('BENCH_SECONDS %.6f' % (time.perf_counter() - _t0))"],
}


def commands(mode, steps):
    pre = ["break step_loop", "continue", "print $pc"]
    timed = []
    for line in TIMED[mode]:
        timed += [part.format(steps=steps) for part in line.split("\n")]
    return pre + timed + ["x/i $pc", "kill"]


REPLAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rsp_replay.py")


def run_script_server(argv, prog, cmds):
    server = harness.Server("gdb-floor", [], argv=argv)
    try:
        result = harness.run_gdb(cmds, prog, server.address, timeout=600, markers=False)
        server.wait_exit(10.0)
    finally:
        server.stop()
    return result, server


# btstub with one of its shortcuts off.
BTSTUB_VARIANTS = {
    "btstub-nopoll": ("--busy-poll=0",),
    "btstub-noahead": ("--no-step-ahead",),
}


def measure(kind, mode, steps):
    """One run; returns (seconds, gdb argv, server argv)."""
    prog = harness.program("stepper")
    if kind == "gdb-floor":
        # gdb alone: the same session recorded through btstub, then served
        # from the recording with no server or program behind it.
        log = os.path.join(tempfile.mkdtemp(prefix="stepi-floor-"), "session.jsonl")
        run_script_server([sys.executable, REPLAY, "record", log, "--",
                           harness.server_path("btstub"), "-", prog], prog, commands(mode, steps))
        result, server = run_script_server([sys.executable, REPLAY, "serve", log], prog,
                                           commands(mode, steps))
    elif kind in BTSTUB_VARIANTS:
        result, server = harness.run_gdb_tcp("btstub", prog, [], commands(mode, steps),
                                             options=("--once",) + BTSTUB_VARIANTS[kind],
                                             timeout=600, markers=False)
    else:
        result, server = harness.run_gdb_tcp(kind, prog, [], commands(mode, steps),
                                             timeout=600, markers=False)
    m = re.search(r"^BENCH_SECONDS ([0-9.]+)$", result.output, re.M)
    if not m or "<step_loop+" not in result.output.split("BENCH_SECONDS")[-1]:
        raise harness.HarnessError(
            "%s (%s) did not complete %d steps inside step_loop:\n%s" %
            (kind, mode, steps, result.transcript()))
    return float(m.group(1)), result.argv, server.argv


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--servers", default="gdbserver,btstub")
    parser.add_argument("--modes", default="count,loop")
    parser.add_argument("--background-load", action="store_true",
                        help="run a nice-19 busy loop on every CPU meanwhile "
                             "(a build in the background)")
    args = parser.parse_args()
    hogs = start_background_load() if args.background_load else []
    try:
        measure_all(args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def start_background_load():
    """One busy loop per CPU, pinned there, at the lowest priority."""
    hogs = []
    for cpu in sorted(os.sched_getaffinity(0)):
        hog = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"])
        os.sched_setaffinity(hog.pid, {cpu})
        hogs.append(hog)
    return hogs


def measure_all(args):

    rows = []
    shown = []
    for mode in args.modes.split(","):
        for kind in args.servers.split(","):
            times = []
            for _ in range(args.repeat):
                seconds, gdb_argv, server_argv = measure(kind, mode, args.steps)
                times.append(seconds)
            median = statistics.median(times)
            rows.append((kind, mode, median, times))
            if (kind, mode) not in [(k, m) for k, m, _, _ in shown]:
                shown.append((kind, mode, server_argv, gdb_argv))

    print("stepi benchmark: %d steps, median of %d runs, %s, %s%s" %
          (args.steps, args.repeat, os.uname().machine,
           "%d CPUs" % os.cpu_count(),
           ", a nice-19 busy loop on every CPU" if args.background_load else ""))
    print()
    print("| server | mode | seconds | µs per stepi | runs (s) |")
    print("|---|---|---:|---:|---|")
    for kind, mode, median, times in rows:
        print("| %s | %s | %.3f | %.0f | %s |" % (
            kind, mode, median, median / args.steps * 1e6,
            ", ".join("%.3f" % t for t in times)))
    by_mode = {}
    for kind, mode, median, _ in rows:
        by_mode.setdefault(mode, {})[kind] = median
    print()
    for mode, medians in by_mode.items():
        if "gdbserver" in medians and "btstub" in medians:
            print("%s: btstub / gdbserver = %.2f" %
                  (mode, medians["btstub"] / medians["gdbserver"]))
        if "gdbserver" in medians and "gdb-floor" in medians:
            print("%s: gdb-floor / gdbserver = %.2f (gdb against a sleeping Python replayer)" %
                  (mode, medians["gdb-floor"] / medians["gdbserver"]))
    print()
    print("Command lines (the port is picked by the server, :0):")
    for kind, mode, server_argv, gdb_argv in shown:
        print()
        print("%s, %s:" % (kind, mode))
        print("    " + shlex.join(server_argv))
        print("    " + shlex.join(gdb_argv))
    print()
    print("Reproduce: " + shlex.join([sys.executable] + sys.argv))


if __name__ == "__main__":
    try:
        main()
    except harness.HarnessError as e:
        print("benchmark failed: %s" % e, file=sys.stderr)
        sys.exit(1)
