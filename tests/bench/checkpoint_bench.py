#!/usr/bin/env python3
"""Checkpoint benchmark (not a test): what the software tracer's checkpoints
cost while recording, and how long a reverse step takes that needs a new
copy of the program, in one run each.

Workload: tests/programs/bench_checkpoints.c at -O2
(PROGRAMS_DIR/bench_checkpoints_O2 ROUNDS INNER SYSCALLS): ROUNDS rounds of
INNER loop iterations (5 instructions, one taken branch each) between
bench_begin and bench_end, with getppid() after each round if SYSCALLS is 1.

  record   Recording cost. `btstub --record`, gdb stops at bench_begin, then
           the `continue` to bench_end is timed (Python's perf_counter,
           inside gdb), for the programs
             syscalls  a system call every INNER*5 instructions
             loop      no system call
           each with checkpoints (btstub's default) and without
           (`--checkpoint-memory=0`), the four interleaved, --repeat times.
           --start-at-begin: `monitor record start` at bench_begin instead
           of --record (the tracer then has planted no int3s in the
           start-up code). --trace-stops=MODE passes btstub's option
           (translate: the translating tracer).
           Prints the median seconds, the overhead of checkpoints in %, and
           from `monitor record status` at bench_end the branches recorded
           (the whole history, from the first instruction), the checkpoints
           held and their memory.

  reverse  Reverse-step latency. For each history length N (instructions):
           btstub without --record, `monitor record start` at bench_begin,
           `continue` to bench_end (a history of about N instructions:
           the loop program, N/5 taken branches), then --steps times
           `reverse-stepi` + `info registers rax`, each timed on its own
           (gdb's rax read needs a copy of the program at the new point);
           then `continue` back to the live end and --steps times `stepi` +
           `info registers rax` there. The same again with
           `--checkpoint-memory=0` (rax is unavailable in the past then: what
           the reverse step costs without a copy). Every step's pc and rax
           are checked against gdb's own `record full` over the last round,
           natively. --checkpoint-every=N passes btstub's option.

  watch    Searches with a watchpoint in the past. For each spacing
           (--spacings, btstub's --checkpoint-every): `btstub --record`,
           `continue` to bench_end, `watch rounds_done` (written once a
           round, after its --inner iterations), then --searches times
           `reverse-continue` and one `reverse-stepi` with the watch still
           set, each timed inside gdb; after each, rounds_done (it must be
           one round less each time) and the last search's native re-runs,
           halvings and instructions stepped (`monitor replay status`).

After every gdb run the script looks for processes still running the
workload (leftover copies) and reports them.

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/checkpoint_bench.py record [--repeat 5] [--rounds 200] [--inner 600]
        [--start-at-begin]
    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/checkpoint_bench.py reverse [--lengths 1e3,1e6,1e7] [--steps 16]
    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/checkpoint_bench.py watch [--rounds 20] [--inner 30000] [--spacings 700,100000]
"""

import argparse
import datetime
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness  # noqa: E402

INSNS_PER_ITERATION = 5  # work()'s loop at -O2: imul, add, add, cmp, jne
BYTES_PER_BRANCH = 24    # btstub --help, --trace-size


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")


def git_head():
    try:
        return subprocess.run(["git", "-C", harness.SOURCE_ROOT, "rev-parse",
                               "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def leftover(prog):
    """Pids of processes still running `prog` (copies the stub left)."""
    real = os.path.realpath(prog)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/exe" % entry) == real:
                pids.append(int(entry))
        except OSError:
            pass
    return pids


STRAYS = []


def run_gdb(argv, prog, timeout):
    """Runs gdb; returns its output. Notes processes left running `prog`
    once gdb has exited (waiting up to 2 s for them to go), then kills
    gdb's session."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        harness.kill_session(proc.pid)
        out, _ = proc.communicate()
        raise harness.HarnessError("timeout:\n$ %s\n%s" % (
            shlex.join(argv), out.decode("utf-8", "replace")[-4000:]))
    deadline = time.monotonic() + 2.0
    while leftover(prog) and time.monotonic() < deadline:
        time.sleep(0.05)
    strays = leftover(prog)
    if strays:
        STRAYS.append((shlex.join(argv), strays))
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    harness.kill_session(proc.pid)
    return out.decode("utf-8", "replace")


def gdb_base():
    return [harness.gdb_path(), "-batch", "-nx", "-q",
            "-iex", "set debuginfod enabled off",
            # A loaded machine must not make gdb resend packets.
            "-iex", "set remotetimeout 60",
            "-ex", "set pagination off", "-ex", "set confirm off"]


def btstub_target(prog, args, options):
    server = [harness.server_path("btstub")] + options + ["-", prog] + \
        [str(a) for a in args]
    return "target remote | " + shlex.join(server)


def status_numbers(text):
    """(branches, checkpoints, KiB) from one `monitor record status`."""
    b = re.search(r"thread \d+: (\d+) of \d+ branches(?:, (\d+) older dropped)?",
                  text)
    c = re.search(r"Checkpoints: (\d+) .*?, (\d+) KiB of memory", text)
    return (int(b.group(1)) + int(b.group(2) or 0) if b else None,
            int(c.group(1)) if c else 0, int(c.group(2)) if c else 0)


def taken_in_all(text):
    """Checkpoints added since recording began (`N taken in all`): the
    held count stops at its limit (1,024), this one does not."""
    m = re.search(r"(\d+) taken in all", text)
    return int(m.group(1)) if m else None


TIME_CONTINUE = [
    "python import time; _t0 = time.perf_counter()",
    "continue",
    "python print('BENCH_SECONDS %.6f' % (time.perf_counter() - _t0))",
]


# --------------------------------------------------------------------------
# record

def record_once(prog, workload, checkpoints, rounds, inner, at_begin, trace_stops=None):
    options = ["--trace-size=64m"] + ([] if at_begin else ["--record"])
    if trace_stops:
        options.append("--trace-stops=" + trace_stops)
    if not checkpoints:
        options.append("--checkpoint-memory=0")
    args = [rounds, inner, 1 if workload == "syscalls" else 0]
    cmds = [btstub_target(prog, args, options), "break bench_begin",
            "break bench_end", "continue"] + (
            ["monitor record start"] if at_begin else []) + [
            "echo BENCH_BEGIN\\n",
            "monitor record status"] + TIME_CONTINUE + [
            "echo BENCH_STATUS\\n", "monitor record status", "kill"]
    argv = gdb_base()
    for c in cmds:
        argv += ["-ex", c]
    argv.append(prog)
    text = run_gdb(argv, prog, timeout=1800)
    secs = re.search(r"^BENCH_SECONDS ([0-9.]+)$", text, re.M)
    after = text.split("BENCH_STATUS", 1)[-1]
    branches, count, kib = status_numbers(after)
    begin_text = text.split("BENCH_BEGIN", 1)[-1].split("BENCH_SECONDS", 1)[0]
    begin = status_numbers(begin_text)
    if not secs or "bench_end" not in text or branches is None:
        raise harness.HarnessError("run did not complete:\n$ %s\n%s" % (
            shlex.join(argv), text[-4000:]))
    return {"seconds": float(secs.group(1)), "branches": branches,
            "checkpoints": count, "kib": kib, "argv": argv,
            "taken": (taken_in_all(after) - taken_in_all(begin_text)
                      if taken_in_all(after) is not None and taken_in_all(begin_text) is not None
                      else count - begin[1])}


def bench_record(args, prog):
    setups = [(w, c) for w in ("syscalls", "loop") for c in (True, False)]
    runs = {s: [] for s in setups}
    for i in range(args.repeat):
        for s in setups:
            print("record: %s, checkpoints %s, run %d ..." %
                  (s[0], "on" if s[1] else "off", i + 1),
                  file=sys.stderr, flush=True)
            runs[s].append(record_once(prog, s[0], s[1], args.rounds,
                                       args.inner, args.start_at_begin, args.trace_stops))
    insns = args.rounds * args.inner * INSNS_PER_ITERATION
    print("checkpoint_bench record: %s %d %d, %s%s, at %s, %s, load average %s"
          % (os.path.basename(prog), args.rounds, args.inner,
             "`monitor record start` at bench_begin" if args.start_at_begin
             else "--record",
             " --trace-stops=" + args.trace_stops if args.trace_stops else "",
             git_head(), now(), load_average()))
    print()
    print("Timed: bench_begin -> bench_end, %d rounds of %d instructions "
          "(%d in work()); `syscalls` adds a getppid() per round." % (
              args.rounds, args.inner * INSNS_PER_ITERATION, insns))
    print()
    print("| program | checkpoints | seconds (median of %d) | overhead | "
          "checkpoints taken | ms per checkpoint | µs per taken branch | "
          "runs (s) |" % args.repeat)
    print("|---|---|---:|---:|---:|---:|---:|---|")
    medians = {s: statistics.median(r["seconds"] for r in runs[s])
               for s in setups}
    for s in setups:
        w, c = s
        off = medians[(w, False)]
        overhead = "%+.1f%%" % (100.0 * (medians[s] - off) / off) if c else "-"
        taken = runs[s][-1]["taken"]
        each = ("%.1f" % (1000.0 * (medians[s] - off) / taken)
                if c and taken else "-")
        range_branches = args.rounds * (args.inner + 3)  # approx: work + main
        print("| %s | %s | %.3f | %s | %d | %s | %.1f | %s |" % (
            w, "on" if c else "off (`--checkpoint-memory=0`)", medians[s],
            overhead, taken, each, 1e6 * medians[s] / range_branches,
            ", ".join("%.3f" % r["seconds"] for r in runs[s])))
    print()
    print("At bench_end (`monitor record status`, last run; branches since "
          "%s):" % ("bench_begin" if args.start_at_begin
                    else "the program's first instruction"))
    print()
    print("| program | checkpoints | branches recorded | checkpoints held | "
          "checkpoint memory (KiB) | KiB per checkpoint |")
    print("|---|---|---:|---:|---:|---:|")
    for s in setups:
        r = runs[s][-1]
        print("| %s | %s | %d | %d | %d | %s |" % (
            s[0], "on" if s[1] else "off", r["branches"], r["checkpoints"],
            r["kib"], "%.0f" % (r["kib"] / r["checkpoints"])
            if r["checkpoints"] else "-"))
    print()
    print("Commands (first run of each):")
    print()
    for s in setups:
        print("    " + shlex.join(runs[s][0]["argv"]))


# --------------------------------------------------------------------------
# reverse

# Run inside gdb (source'd): the timed steps. BENCH_STEP lines carry the
# seconds, where the step landed and rax.
STEPS_PY = r'''
import re
import time
def _bench_steps(label, command, n):
    for i in range(n):
        t0 = time.perf_counter()
        gdb.execute(command, to_string=True)
        regs = gdb.execute("info registers rax", to_string=True)
        dt = time.perf_counter() - t0
        where = gdb.execute("info symbol $pc", to_string=True).split(" in section")[0].strip()
        rax = regs.split()[1] if len(regs.split()) > 1 else "?"
        # Untimed: how often the copy stopped for how many visits of its pc.
        run = "-"
        if label == "past":
            try:
                status = gdb.execute("monitor replay status", to_string=True)
                m = re.search(r"stopped it (\d+) times for (\d+) visits", status)
                if m:
                    run = "%s/%s" % m.groups()
            except gdb.error:
                pass
        print("BENCH_STEP %s %d %.6f %s|%s|%s" % (label, i, dt, rax, where, run))
'''


def parse_steps(text, label):
    steps = []
    for m in re.finditer(r"^BENCH_STEP %s (\d+) ([0-9.]+) (\S+)\|(.*)\|(\S+)$" % label,
                         text, re.M):
        steps.append({"seconds": float(m.group(2)), "rax": m.group(3),
                      "where": m.group(4), "run": m.group(5)})
    return steps


def steps_script(tmp):
    path = os.path.join(tmp, "steps.py")
    with open(path, "w") as f:
        f.write(STEPS_PY)
    return path


def reference_steps(prog, rounds, inner, steps, tmp):
    """pc and rax after each reverse-stepi from bench_end, by gdb's own
    `record full` over the last round, natively."""
    cmds = ["break work", "ignore 1 %d" % (rounds - 1), "run", "record full",
            "set record full insn-number-max unlimited", "break bench_end",
            "continue", "source " + steps_script(tmp),
            "python _bench_steps('ref', 'reverse-stepi', %d)" % steps,
            "record stop", "kill"]
    argv = gdb_base()
    for c in cmds:
        argv += ["-ex", c]
    argv += ["--args", prog, str(rounds), str(inner), "0"]
    text = run_gdb(argv, prog, timeout=600)
    ref = parse_steps(text, "ref")
    if len(ref) != steps:
        raise harness.HarnessError("reference run did not complete:\n$ %s\n%s"
                                   % (shlex.join(argv), text[-4000:]))
    return ref


def reverse_once(prog, rounds, inner, steps, checkpoints, tmp, extra=()):
    branches = rounds * inner + 1000
    trace = max(64 << 20, ((branches * BYTES_PER_BRANCH * 5 // 4) >> 20) + 1 << 20)
    options = ["--trace-size=%d" % trace] + list(extra)
    if not checkpoints:
        options.append("--checkpoint-memory=0")
    cmds = [btstub_target(prog, [rounds, inner, 0], options),
            "break bench_begin", "break bench_end", "continue",
            "monitor record start"] + TIME_CONTINUE + [
            "echo BENCH_STATUS\\n", "monitor record status",
            "source " + steps_script(tmp),
            "python _bench_steps('past', 'reverse-stepi', %d)" % steps,
            # Forward through the replay to the live end (bench_end).
            "continue",
            "python _bench_steps('live', 'stepi', %d)" % steps,
            "kill"]
    argv = gdb_base()
    for c in cmds:
        argv += ["-ex", c]
    argv.append(prog)
    text = run_gdb(argv, prog, timeout=3600)
    secs = re.search(r"^BENCH_SECONDS ([0-9.]+)$", text, re.M)
    status = text.split("BENCH_STATUS", 1)[-1].split("BENCH_STEP", 1)[0]
    branches, count, kib = status_numbers(status)
    past, live = parse_steps(text, "past"), parse_steps(text, "live")
    if not secs or len(past) != steps or len(live) != steps:
        raise harness.HarnessError("run did not complete:\n$ %s\n%s" % (
            shlex.join(argv), text[-4000:]))
    return {"seconds": float(secs.group(1)), "branches": branches,
            "checkpoints": count, "kib": kib, "past": past, "live": live,
            "argv": argv}


def shape(length):
    """(rounds, inner) for a history of about `length` instructions."""
    per_round = 1000 * INSNS_PER_ITERATION
    if length <= per_round:
        return 1, max(1, length // INSNS_PER_ITERATION)
    return length // per_round, 1000


def ms(seconds):
    return "%.1f" % (seconds * 1000)


def step_cell(step):
    """A step's time, and the copy's stops / visits where it re-ran one."""
    return ms(step["seconds"]) + ("" if step["run"] == "-" else " (%s)" % step["run"])


def bench_reverse(args, prog):
    lengths = [int(float(x)) for x in args.lengths.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="checkpoint_bench") as tmp:
        for n in lengths:
            rounds, inner = shape(n)
            print("reverse: %d instructions (%d x %d): reference ..." %
                  (n, rounds, inner), file=sys.stderr, flush=True)
            ref = reference_steps(prog, rounds, inner, args.steps, tmp)
            row = {"length": n, "rounds": rounds, "inner": inner, "ref": ref}
            for checkpoints in (True, False)[:1 if args.only_on else 2]:
                print("reverse: %d instructions, checkpoints %s ..." %
                      (n, "on" if checkpoints else "off"), file=sys.stderr,
                      flush=True)
                extra = ["--checkpoint-every=" + args.checkpoint_every] if args.checkpoint_every else []
                row[checkpoints] = reverse_once(prog, rounds, inner,
                                                args.steps, checkpoints, tmp, extra)
            results.append(row)

    print("checkpoint_bench reverse: %s, at %s, %s, load average %s" % (
        os.path.basename(prog), git_head(), now(), load_average()))
    print()
    print("| history (insns) | recording (s), checkpoints on / off | "
          "branches | checkpoints held | checkpoint memory (KiB) | "
          "first bs+rax (ms) | next %d bs+rax, median (min-max) (ms) | "
          "same without checkpoints: first, median (ms) | "
          "stepi+rax at the live end, median (ms) |" % (args.steps - 1))
    print("|---:|---|---:|---:|---:|---:|---|---|---:|")
    problems = []
    for row in results:
        on = row[True]
        off = row.get(False, on)
        rest = [s["seconds"] for s in on["past"][1:]]
        rest_off = [s["seconds"] for s in off["past"][1:]]
        print("| %s | %.2f / %.2f | %d | %d | %d | %s | %s (%s-%s) | %s, %s | %s |" % (
            "{:,}".format(row["length"]), on["seconds"], off["seconds"],
            on["branches"], on["checkpoints"], on["kib"],
            ms(on["past"][0]["seconds"]), ms(statistics.median(rest)),
            ms(min(rest)), ms(max(rest)), ms(off["past"][0]["seconds"]),
            ms(statistics.median(rest_off)),
            ms(statistics.median(s["seconds"] for s in on["live"]))))
        for i, (got, want) in enumerate(zip(on["past"], row["ref"])):
            if got["where"] != want["where"] or got["rax"] != want["rax"]:
                problems.append("%d insns, reverse step %d: btstub at %s rax %s, "
                                "record full at %s rax %s" % (
                                    row["length"], i + 1, got["where"],
                                    got["rax"], want["where"], want["rax"]))
        for i, (got, want) in enumerate(zip(off["past"], row["ref"])
                                        if False in row else []):
            if got["where"] != want["where"]:
                problems.append("%d insns, no checkpoints, reverse step %d: "
                                "btstub at %s, record full at %s" % (
                                    row["length"], i + 1, got["where"],
                                    want["where"]))
    print()
    print("Per reverse step (ms, checkpoints on; where it landed, as "
          "`info symbol $pc`; after a re-run, the copy's stops / visits of "
          "its pc from `monitor replay status`):")
    print()
    print("| step | where | " + " | ".join(
        "{:,}".format(r["length"]) for r in results) + " |")
    print("|---:|---|" + "---:|" * len(results) + "")
    for i in range(args.steps):
        print("| %d | %s | %s |" % (i + 1, results[0]["ref"][i]["where"],
                                    " | ".join(step_cell(r[True]["past"][i])
                                               for r in results)))
    print()
    if problems:
        print("WRONG VALUES against record full:")
        for p in problems:
            print("  " + p)
    else:
        print("Every reverse step's pc and rax matched gdb's record full.")
    print()
    print("Commands (checkpoints on):")
    print()
    for row in results:
        print("    " + shlex.join(row[True]["argv"]))


# --------------------------------------------------------------------------
# watch

WATCH_PY = r'''
import re
import time
def _bench_watch(n):
    for i in range(n + 1):
        command = "reverse-continue" if i < n else "reverse-stepi"
        t0 = time.perf_counter()
        gdb.execute(command, to_string=True)
        dt = time.perf_counter() - t0
        value = gdb.execute("print rounds_done", to_string=True).split("=")[-1].strip()
        status = gdb.execute("monitor replay status", to_string=True)
        m = re.search(r"Last watch search: (\d+) native re-runs with the watches, (\d+) halvings, "
                      r"(\d+) instructions stepped", status)
        effort = "/".join(m.groups()) if m else "-"
        print("BENCH_WATCH %s %d %.6f %s %s" % (command, i, dt, value, effort))
'''


def watch_once(prog, rounds, inner, searches, spacing, tmp):
    """Seconds of each reverse-continue with `watch rounds_done` from
    bench_end, then of a reverse-stepi with the watch still set."""
    path = os.path.join(tmp, "watch.py")
    with open(path, "w") as f:
        f.write(WATCH_PY)
    options = ["--record", "--trace-size=%d" % (256 << 20), "--checkpoint-every=%d" % spacing]
    argv = gdb_base() + ["-ex", btstub_target(prog, [rounds, inner, 0], options)]
    for c in ["break bench_end", "continue", "delete", "watch rounds_done", "source " + path,
              "python _bench_watch(%d)" % searches, "kill"]:
        argv += ["-ex", c]
    argv.append(prog)
    text = run_gdb(argv, prog, timeout=900)
    rows = []
    for line in text.splitlines():
        if line.startswith("BENCH_WATCH "):
            _, command, i, dt, value, effort = line.split(" ", 5)
            rows.append((command, int(i), float(dt), value, effort))
    if len(rows) != searches + 1:
        raise harness.HarnessError("watch run did not complete:\n$ %s\n%s" % (shlex.join(argv), text[-4000:]))
    return rows


def bench_watch(args, prog):
    spacings = [int(float(x)) for x in args.spacings.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="checkpoint_bench") as tmp:
        for spacing in spacings:
            print("watch: --checkpoint-every=%d ..." % spacing, file=sys.stderr, flush=True)
            results.append((spacing, watch_once(prog, args.rounds, args.inner, args.searches, spacing, tmp)))
    print("checkpoint_bench watch: %s %d %d 0, at %s, %s, load average %s" % (
        os.path.basename(prog), args.rounds, args.inner, git_head(), now(), load_average()))
    print()
    print("| `--checkpoint-every` | reverse-continue with a watch (ms, each) | reverse-stepi with the watch (ms) | "
          "last search: native re-runs / halvings / instructions stepped | rounds_done after each |")
    print("|---:|---|---:|---|---|")
    wrong = []
    for spacing, rows in results:
        conts = [r for r in rows if r[0] == "reverse-continue"]
        step = rows[-1]
        print("| %d | %s | %.1f | %s | %s |" % (
            spacing, ", ".join("%.1f" % (r[2] * 1000) for r in conts), step[2] * 1000,
            ", ".join(r[4] for r in rows), ", ".join(r[3] for r in rows)))
        # Going back, the watch stops before each write: the round before.
        want = [str(args.rounds - 1 - i) for i in range(len(conts))]
        if [r[3] for r in conts] != want:
            wrong.append("--checkpoint-every=%d: rounds_done %s, expected %s" % (
                spacing, [r[3] for r in conts], want))
    print()
    print("\n".join(wrong) if wrong else "Every search stopped at the write it should have.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--repeat", type=int, default=5)
    rec.add_argument("--rounds", type=int, default=200)
    rec.add_argument("--inner", type=int, default=600,
                     help="iterations per round (5 instructions each)")
    rec.add_argument("--start-at-begin", action="store_true",
                     help="record from bench_begin (`monitor record start`) "
                     "instead of from the first instruction (--record)")
    rec.add_argument("--trace-stops", default=None,
                     help="btstub's --trace-stops (e.g. translate); its default when not given")
    rev = sub.add_parser("reverse")
    rev.add_argument("--lengths", default="1e3,1e6,1e7",
                     help="history lengths in instructions")
    rev.add_argument("--steps", type=int, default=16)
    rev.add_argument("--checkpoint-every", default=None,
                     help="btstub's --checkpoint-every; its default when not given")
    rev.add_argument("--only-on", action="store_true",
                     help="skip the runs without checkpoints (their columns "
                     "then repeat the runs with them)")
    wat = sub.add_parser("watch")
    wat.add_argument("--rounds", type=int, default=20)
    wat.add_argument("--inner", type=int, default=30000,
                     help="iterations of work() per round (one taken branch each)")
    wat.add_argument("--searches", type=int, default=4)
    wat.add_argument("--spacings", default="700,100000",
                     help="btstub --checkpoint-every values, one run each")
    args = parser.parse_args()

    prog = harness.program("bench_checkpoints", "O2")
    if args.bench == "record":
        bench_record(args, prog)
    elif args.bench == "watch":
        bench_watch(args, prog)
    else:
        bench_reverse(args, prog)
    print()
    if STRAYS:
        print("LEFTOVER PROCESSES running %s after gdb exited:" % prog)
        for argv, pids in STRAYS:
            print("  pids %s after: %s" % (pids, argv))
    else:
        print("No process running %s was left after any run." %
              os.path.basename(prog))


if __name__ == "__main__":
    main()
