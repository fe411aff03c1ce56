#!/usr/bin/env python3
"""Recording benchmark (not a test): how fast the same workload is recorded
by btstub's software branch tracer and by gdb's own `record full`, in one run.

Workload: tests/programs/record_workload.c (PROGRAMS_DIR/record_workload_O2),
the range bench_begin -> bench_end, sized by --rounds (about 720 instructions
per round). Only the `continue` across that range is timed (inside gdb, with
Python's perf_counter). Setups:

  btrace         gdb `record btrace` (bts) over btstub, then `continue`
  btstub-record  `btstub --record --trace-stops=int3` (the ptrace tracer
                 alone, tracing from the first instruction; gdb finds the
                 trace on connecting), then `continue`
  btstub-record-debugreg
                 the same with `--trace-stops=debugreg`: a debug register at
                 each block end instead of int3s (where debug registers trap)
  btstub-record-translate
                 the same with `--trace-stops=translate`: translated code in
                 a cache in the program logs the branches, stopping at
                 untranslated targets and indirect transfers
  full-native    gdb's `record full`, plain native gdb (`run`)
  full-gdbserver gdb's `record full` through gdbserver

and always a row `native`: the program alone, no debugger, timing the same
range itself (BENCH_TIME=1: clock_gettime just before bench_begin() and
just after bench_end(), printed on stderr); the median of --native-repeat
runs, each a new process as under the debugger. Every setup's seconds are
also given as a multiple of it ("x native", same pinning).

each with gdb unpinned (as users run it) and pinned (`taskset -c CPU gdb`;
btstub and gdbserver, started by gdb through a pipe, inherit the pinning;
btstub also pins itself and its program to the CPU it starts on).

Reported per setup: instructions recorded (gdb's `info record`; all setups
must agree, else the run is marked), seconds, instructions per second, the
debugged program's context switches during the range (from
/proc/PID/status: every ptrace stop switches the program out once, so this
counts ptrace stops, plus rare preemptions), and for btstub the taken
branches it stored (`monitor record status`) and stops per taken branch.

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/record_bench.py [--rounds 280] [--cpu 0]
        [--setups btrace,btstub-record,full-native,full-gdbserver]
        [--no-pinned] [--native-repeat 5]
"""

import argparse
import datetime
import os
import re
import shlex
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness  # noqa: E402

# No branch may be dropped: room for the range's taken branches (about 133
# a round) at a BTS record each (24 bytes), and a quarter more.
TAKEN_PER_ROUND = 133
BTS_RECORD_BYTES = 24


def trace_bytes(rounds):
    wanted = rounds * TAKEN_PER_ROUND * BTS_RECORD_BYTES * 5 // 4
    mib = 1024 * 1024
    return max(64 * mib, (wanted + mib - 1) // mib * mib)


CTX = ("python import re; _ctx = lambda: sum(int(v) for v in re.findall("
       "r'ctxt_switches:\\s+(\\d+)', open('/proc/%d/status' % "
       "gdb.selected_inferior().pid).read()))")
START = "python import time; _c0 = _ctx(); _t0 = time.perf_counter()"
STOP = ("python _t1 = time.perf_counter(); print('BENCH_SECONDS %.6f' % "
        "(_t1 - _t0)); print('BENCH_CTX %d' % (_ctx() - _c0))")


BTSTUB_SETUPS = ("btrace", "btstub-record", "btstub-record-debugreg", "btstub-record-translate")
TRACE_STOPS = {"btstub-record": "int3", "btstub-record-debugreg": "debugreg", "btstub-record-translate": "translate"}


def setup_commands(setup, rounds):
    """gdb commands before the timed continue (after the target is set)."""
    pre = ["set pagination off", "break bench_begin", "break bench_end"]
    if setup == "full-native":
        return pre + ["run", "record full",
                      "set record full insn-number-max unlimited"]
    if setup == "full-gdbserver":
        return pre + ["set range-stepping off", "continue", "record full",
                      "set record full insn-number-max unlimited"]
    if setup == "btrace":
        return pre + ["set record btrace bts buffer-size %d" % trace_bytes(rounds),
                      "continue", "record btrace bts",
                      "monitor record status"]
    if setup in ("btstub-record", "btstub-record-debugreg", "btstub-record-translate"):
        return pre + ["continue", "monitor record status"]
    raise ValueError(setup)


def gdb_argv(setup, prog, rounds, cpu):
    server = None
    if setup in BTSTUB_SETUPS:
        server = [harness.server_path("btstub")]
        if setup != "btrace":
            server += ["--record", "--trace-size=%d" % trace_bytes(rounds)]
        if setup in TRACE_STOPS:
            server += ["--trace-stops=" + TRACE_STOPS[setup]]
    elif setup == "full-gdbserver":
        server = [harness.server_path("gdbserver")]
    argv = ["taskset", "-c", str(cpu)] if cpu is not None else []
    argv += [harness.gdb_path(), "-batch", "-nx", "-q",
             "-iex", "set debuginfod enabled off",
             # A loaded machine must not make gdb resend packets.
             "-iex", "set remotetimeout 30"]
    if server is None:
        target = []
    else:
        target = ["target remote | " + shlex.join(server + ["-", prog, str(rounds)])]
    # `info record` before and after: btstub --record has traced since the
    # program's first instruction; only the range counts.
    cmds = target + setup_commands(setup, rounds) + ["info record", CTX, START,
                                             "continue", STOP, "info record"]
    if setup in BTSTUB_SETUPS:
        cmds.append("monitor record status")
    cmds += ["record stop", "kill"]
    for c in cmds:
        argv += ["-ex", c]
    # --args ends gdb's options: the program's arguments follow it.
    return argv + (["--args", prog, str(rounds)] if server is None else [prog])


def measure_native(prog, rounds, cpu, repeat):
    """The range's own time with no debugger: median of `repeat` runs."""
    argv = (["taskset", "-c", str(cpu)] if cpu is not None else []) + [prog, str(rounds)]
    env = dict(os.environ, BENCH_TIME="1")
    runs = []
    for _ in range(repeat):
        status, out, err = harness.run_command(argv, timeout=60, env=env)
        m = re.search(r"^bench_range_ns (\d+)$", err, re.M)
        if status != 0 or not m:
            raise harness.HarnessError("native run failed:\n$ BENCH_TIME=1 %s\n%s%s" %
                                       (shlex.join(argv), out, err))
        runs.append(int(m.group(1)) / 1e9)
    return {"setup": "native", "pinned": cpu is not None,
            "argv": ["env", "BENCH_TIME=1"] + argv, "seconds": statistics.median(runs),
            "runs": runs, "ctx": None, "insns": None, "branches": None}


def branches(status_text):
    """Taken branches stored for the main thread, counting dropped ones."""
    m = re.search(r"thread \d+: (\d+) of \d+ branches(?:, (\d+) older dropped)?",
                  status_text)
    if not m:
        return None
    return int(m.group(1)) + int(m.group(2) or 0)


def measure(setup, prog, rounds, cpu):
    argv = gdb_argv(setup, prog, rounds, cpu)
    status, out, err = harness.run_command(argv, timeout=1800)
    text = out + err
    secs = re.search(r"^BENCH_SECONDS ([0-9.]+)$", text, re.M)
    ctx = re.search(r"^BENCH_CTX (\d+)$", text, re.M)
    counts = [int(n) for n in re.findall(
        r"(?:Recorded|Log contains) (\d+) instructions", text)]
    if setup.startswith("full") and len(counts) == 1:
        counts.insert(0, 0)  # record full says nothing while the log is empty
    if setup.startswith("btstub-record") and not counts:
        # gdb leaves whole-program recording to btstub (for bs/bc) and has
        # no count of its own: the row borrows the btrace row's count.
        counts = [0, 0]
    if not (secs and ctx and len(counts) == 2) or "bench_end" not in text:
        raise harness.HarnessError("%s did not complete:\n$ %s\n%s" %
                                   (setup, shlex.join(argv), text[-4000:]))
    row = {"setup": setup, "pinned": cpu is not None, "argv": argv,
           "seconds": float(secs.group(1)), "ctx": int(ctx.group(1)),
           "insns": counts[1] - counts[0], "branches": None}
    if setup in BTSTUB_SETUPS:
        statuses = re.findall(r"Branch recording .*?(?=\n[^ ]|\Z)", text, re.S)
        if len(statuses) >= 2:
            before, after = branches(statuses[0]), branches(statuses[-1])
            if before is not None and after is not None:
                row["branches"] = after - before
    return row


def table(rows, reference, native):
    lines = ["| setup | gdb pinned | instructions | seconds | insns/s | "
             "x native (same pinning) | "
             "x record full (same pinning) | program ctx switches (~ptrace stops) | "
             "taken branches | stops per taken branch |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        insns = r["insns"] if r["insns"] is not None else None
        if r["setup"] == "native":
            insns = next((o["insns"] for o in rows if o["setup"] != "native"
                          and o["insns"]), None)
        rate = insns / r["seconds"] if (insns and r["seconds"]) else 0
        ref = reference.get(r["pinned"])
        ratio = "%.1f" % (rate / ref) if (ref and rate) else "-"
        nat = native.get(r["pinned"])
        x_native = "%.0f" % (r["seconds"] / nat) if nat else "-"
        per = "-"
        if r["branches"]:
            v = r["ctx"] / r["branches"]
            per = "%.2f" % v if v >= 0.1 else "%.4f" % v
        if not insns:
            shown = "-"
        else:
            shown = "%d%s" % (insns, " (btrace's)" if r.get("borrowed") else
                              " (the others')" if r["setup"] == "native" else "")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["setup"], "yes" if r["pinned"] else "no", shown,
            "%.6f" % r["seconds"] if r["setup"] == "native" else "%.3f" % r["seconds"],
            "%.0f" % rate if rate else "-", x_native, ratio,
            r["ctx"] if r["ctx"] is not None else "-",
            r["branches"] if r["branches"] is not None else "-", per))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=280,
                        help="workload size (~720 instructions per round)")
    parser.add_argument("--cpu", type=int, default=0,
                        help="CPU for the pinned runs")
    parser.add_argument("--setups",
                        default="btrace,btstub-record,full-native,full-gdbserver")
    parser.add_argument("--no-pinned", action="store_true")
    parser.add_argument("--no-unpinned", action="store_true")
    parser.add_argument("--native-repeat", type=int, default=5,
                        help="native runs (no debugger); the median is used")
    args = parser.parse_args()

    prog = harness.program("record_workload", "O2")
    pinnings = ([] if args.no_unpinned else [None]) + \
               ([] if args.no_pinned else [args.cpu])
    rows = []
    for cpu in pinnings:
        print("running native%s ..." % ("" if cpu is None else
                                        " (pinned to CPU %d)" % cpu),
              file=sys.stderr, flush=True)
        rows.append(measure_native(prog, args.rounds, cpu, args.native_repeat))
        for setup in args.setups.split(","):
            print("running %s%s ..." % (setup, "" if cpu is None else
                                        " (pinned to CPU %d)" % cpu),
                  file=sys.stderr, flush=True)
            rows.append(measure(setup, prog, args.rounds, cpu))
    for r in rows:
        if r["setup"].startswith("btstub-record") and r["insns"] == 0:
            same = [o["insns"] for o in rows if o["setup"] == "btrace"]
            r["insns"] = same[0] if same else 0
            r["borrowed"] = True
    reference = {r["pinned"]: r["insns"] / r["seconds"] for r in rows
                 if r["setup"] == "full-native"}
    native = {r["pinned"]: r["seconds"] for r in rows if r["setup"] == "native"}
    counts = sorted({r["insns"] for r in rows
                     if not r.get("borrowed") and r["setup"] != "native"})
    print("record_bench: %s, %d rounds, %s, load average %s" % (
        os.path.basename(prog), args.rounds,
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        " ".join("%.2f" % v for v in os.getloadavg())))
    print()
    print(table(rows, reference, native))
    print()
    for r in rows:
        if r["setup"] == "native":
            print("native runs%s (s): %s" % (
                " (pinned)" if r["pinned"] else "",
                ", ".join("%.6f" % v for v in r["runs"])))
    print()
    if not counts:
        print("(no setup counted instructions: add btrace to --setups for them)")
    elif len(counts) != 1:
        print("WARNING: the setups recorded different instruction counts: %s"
              % counts)
    else:
        print("All setups recorded the same %d instructions." % counts[0])
    print()
    print("Commands:")
    print()
    for r in rows:
        print("    " + shlex.join(r["argv"]))


if __name__ == "__main__":
    main()
