#!/usr/bin/env python3
"""Recording benchmark on real programs (not a test): Debian's Lua 5.4,
zlib and sqlite3, each run natively and recorded whole by btstub's two
software tracers, in one run.

Programs (each deterministic, one thread, no input but its arguments):

  lua      /usr/bin/lua5.4 tests/bench/real_programs.lua 3000 (Debian
           lua5.4): tables, a sort with a Lua comparator, string.format,
           gmatch, closures, recursion
  zlib     PROGRAMS_DIR/zlib_deflate_O2 256 (tests/bench/zlib_deflate.c,
           linked against Debian's zlib): deflate 256 KiB of generated text
           at level 6 in 16 KiB chunks and inflate it back
  sqlite3  /usr/bin/sqlite3 -bail :memory: '.read tests/bench/real_programs.sql'
           (Debian sqlite3): a 1,000-row table from a recursive CTE, an
           index, aggregates, a join and a sort

Setups:

  native           the program alone, no debugger: the whole process, from
                   fork to wait (os.wait4), median of --native-repeat runs
  int3             gdb over `btstub --record --trace-stops=int3` (the ptrace tracer alone)
  translate        gdb over `btstub --record --trace-stops=translate`
  translate-no-checkpoints
                   the same with --checkpoint-memory=0: no copies of the
                   program (registers and memory in the past unavailable),
                   to show what the checkpoints cost; not run by default
  translate-every-N
                   the same with --checkpoint-every=N: a copy every N
                   branches instead of 700 (fewer forks of the program,
                   longer first re-runs in the past); not run by default
  gdbserver        gdb over /usr/bin/gdbserver, no recording, the same
                   `continue` up to the same exit_group (a `catch syscall
                   exit_group`): what gdb itself costs there (the stops at
                   library loads, reading their symbols), which no server
                   can take away; not run by default

Under btstub gdb connects at the program's first instruction (ld.so's
_start); only gdb's `continue` is timed (Python's perf_counter inside gdb),
up to the exit btstub holds under --record (the thread stopped at its
exit_group system call, still there). So the recorded seconds cover the
same code as the native run but not exec and the process's teardown, which
the native seconds include. gdb runs with `set sysroot /` (it reads the
libraries from this machine's files, not over the connection, when they
load during the `continue`). btstub pins itself and the program to one CPU;
gdb and the native runs are not pinned.

Reported per program and setup: seconds, x native, the CPU time (user +
system, /proc/PID/stat; natively wait4's rusage) of the program and of
btstub during the `continue`, the program's context
switches (/proc/PID/status under btstub, read at connect and at the held
exit: every ptrace stop switches the program out once, so this counts
ptrace stops plus rare preemptions; natively from wait4's rusage), the
taken branches btstub stored (`monitor record status`; the run fails if any
were dropped), stops per branch, and btstub's counters from the same
status: the checkpoints taken, the ptrace tracer's stops, and for
translate the exits from the code cache by cause (direct: to a block not
translated or not linked yet; indirect: a target not in the in-cache
table; log full) and the entries into the cache. Each recorded run's
output must match the native run's.

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/real_programs_bench.py [--programs lua,zlib,sqlite3]
        [--setups native,int3,translate] [--native-repeat 5]
        [--trace-size 2048m] [--scale 1]
"""

import argparse
import datetime
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import harness  # noqa: E402

CTX = ("python import re; _ctx = lambda: sum(int(v) for v in re.findall("
       "r'ctxt_switches:\\s+(\\d+)', open('/proc/%d/status' % "
       "gdb.selected_inferior().pid).read()))")
# CPU seconds (user + system, from /proc/PID/stat) of the program and of
# its parent, btstub (all of its threads).
CPU = ("python import os; _cpu = lambda p: (lambda f: (int(f[11]) + int(f[12])) / "
       "os.sysconf('SC_CLK_TCK'))(open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()); "
       "_pid = gdb.selected_inferior().pid; _server = int(re.search(r'PPid:\\s+(\\d+)', "
       "open('/proc/%d/status' % _pid).read()).group(1))")
START = ("python import time; _c0 = _ctx(); _p0 = _cpu(_pid); _s0 = _cpu(_server); "
         "_t0 = time.perf_counter()")
STOP = ("python _t1 = time.perf_counter(); print('BENCH_SECONDS %.6f' % "
        "(_t1 - _t0)); print('BENCH_CTX %d' % (_ctx() - _c0)); "
        "print('BENCH_CPU %.2f %.2f' % (_cpu(_pid) - _p0, _cpu(_server) - _s0))")
TRACE_STOPS = {"int3": "int3", "translate": "translate", "translate-no-checkpoints": "translate"}


def program_argv(name, scale=1):
    if name == "lua":
        return [shutil.which("lua5.4") or "/usr/bin/lua5.4",
                os.path.join(HERE, "real_programs.lua"), str(3000 * scale)]
    if name == "zlib":
        return [harness.program("zlib_deflate", "O2"), str(256 * scale)]
    if name == "sqlite3":
        return [shutil.which("sqlite3") or "/usr/bin/sqlite3", "-bail", ":memory:",
                ".read " + os.path.join(HERE, "real_programs.sql")]
    raise ValueError(name)


def measure_native(argv, repeat):
    """The whole process, fork to wait4, `repeat` times: median seconds and
    context switches (the child's own rusage), and what it printed."""
    runs, cpus, switches, output = [], [], [], None
    for _ in range(repeat):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            t1 = time.perf_counter()
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        if proc.returncode != 0:
            raise harness.HarnessError("native %s failed (%d):\n%s%s" % (
                shlex.join(argv), proc.returncode, stdout, stderr))
        runs.append(t1 - t0)
        cpus.append(usage.ru_utime + usage.ru_stime)
        switches.append(usage.ru_nvcsw + usage.ru_nivcsw)
        output = stdout
    return {"seconds": statistics.median(runs), "runs": runs, "cpu": statistics.median(cpus),
            "ctx": int(statistics.median(switches)), "output": output}


def gdb_argv(setup, argv, trace_size):
    if setup == "gdbserver":
        return gdb_command(["target remote | " + shlex.join(["/usr/bin/gdbserver", "-"] + argv),
                            "set pagination off", CTX, CPU, "catch syscall exit_group", START,
                            "continue", STOP, "kill"], argv)
    server = [harness.server_path("btstub"), "--record", "--trace-size=" + trace_size]
    stops = TRACE_STOPS.get(setup, "translate" if setup.startswith("translate-every-") else None)
    if stops:
        server.append("--trace-stops=" + stops)
    if setup.endswith("-no-checkpoints"):
        server.append("--checkpoint-memory=0")
    if setup.startswith("translate-every-"):
        server.append("--checkpoint-every=" + setup[len("translate-every-"):])
    return gdb_command(["target remote | " + shlex.join(server + ["-"] + argv),
                        "set pagination off", "monitor record status", CTX, CPU, START,
                        "continue", STOP, "monitor record status", "kill"], argv)


def gdb_command(cmds, argv):
    out = [harness.gdb_path(), "-batch", "-nx", "-q",
           "-iex", "set debuginfod enabled off", "-iex", "set sysroot /",
           "-iex", "set remotetimeout 30"]
    for c in cmds:
        out += ["-ex", c]
    return out + [argv[0]]


def number(pattern, text, default=None):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else default


def parse_status(status):
    """btstub's counters from one `monitor record status`."""
    threads = re.findall(r"thread \d+: (\d+) of \d+ branches in \d+ bytes(, (\d+) older dropped)?", status)
    r = {"branches": sum(int(t[0]) for t in threads),
         "dropped": sum(int(t[2] or 0) for t in threads),
         "checkpoints": number(r"(\d+) taken in all", status, 0),
         "ptrace_stops": number(r"Ptrace tracer: (\d+) stops", status, 0),
         "ptrace_steps": number(r"(\d+) single steps of its own", status, 0)}
    m = re.search(r"Translated code: (\d+) blocks translated, (\d+) left to int3s; (\d+) branches logged "
                  r"in the program; exits: (\d+) direct, (\d+) indirect, (\d+) log full; (\d+) of them to code left "
                  r"to int3s; (\d+) links, "
                  r"(\d+) entries, (\d+) flushes", status)
    if m:
        keys = ("translated", "untranslatable", "logged", "direct", "indirect", "full",
                "to_int3s", "links", "entries", "flushes")
        r.update({k: int(v) for k, v in zip(keys, m.groups())})
        r["refusals"] = [(reason, int(b), first, int(e)) for reason, b, first, e in re.findall(
            r"^  left to int3s, (.*): (\d+) blocks \(first (0x[0-9a-f]+)\), (\d+) exits to them$", status, re.M)]
    return r


def measure_recorded(setup, argv, trace_size, native_output):
    gargv = gdb_argv(setup, argv, trace_size)
    status, out, err = harness.run_command(gargv, timeout=3600)
    text = out + err
    secs = re.search(r"^BENCH_SECONDS ([0-9.]+)$", text, re.M)
    ctx = re.search(r"^BENCH_CTX (\d+)$", text, re.M)
    cpu = re.search(r"^BENCH_CPU ([0-9.]+) ([0-9.]+)$", text, re.M)
    statuses = re.findall(r"Branch recording .*?(?=\n[^ A-Z]|\n\Z|\Z)", text, re.S)
    if setup == "gdbserver":  # no recording, no status: empty counters
        statuses = ["", ""]
    if not (secs and ctx and cpu and len(statuses) >= 2):
        raise harness.HarnessError("%s did not complete:\n$ %s\n%s" %
                                   (setup, shlex.join(gargv), text[-4000:]))
    missing = [line for line in native_output.splitlines() if line not in text]
    if missing or "exit" not in text.split("BENCH_SECONDS")[0][-2000:]:
        raise harness.HarnessError("%s: the recorded run did not print what the native run did, or did "
                                   "not stop at its exit (missing %r):\n$ %s\n%s" %
                                   (setup, missing[:3], shlex.join(gargv), text[-4000:]))
    before, after = parse_status(statuses[0]), parse_status(statuses[-1])
    row = {"setup": setup, "argv": gargv, "seconds": float(secs.group(1)),
           "ctx": int(ctx.group(1)), "status": after, "status_text": statuses[-1],
           "program_cpu": float(cpu.group(1)), "server_cpu": float(cpu.group(2))}
    row["branches"] = after["branches"] - before["branches"]
    return row


def table(results, programs, setups):
    lines = ["| program | setup | seconds | x native | program CPU s | btstub CPU s | "
             "program ctx switches (~ptrace stops) | "
             "taken branches stored | stops per branch | checkpoints taken |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for prog in programs:
        native = results[prog].get("native")
        for setup in setups:
            r = results[prog].get(setup)
            if r is None:
                continue
            x = "%.0f" % (r["seconds"] / native["seconds"]) if native and setup != "native" else (
                "1" if setup == "native" else "-")
            if setup == "native":
                lines.append("| %s | native | %.4f | 1 | %.4f | - | %d | - | - | - |" % (
                    prog, r["seconds"], r["cpu"], r["ctx"]))
                continue
            if setup == "gdbserver":
                lines.append("| %s | gdbserver | %.2f | %s | %.2f | %.2f | %d | - | - | - |" % (
                    prog, r["seconds"], x, r["program_cpu"], r["server_cpu"], r["ctx"]))
                continue
            lines.append("| %s | %s | %.2f | %s | %.2f | %.2f | %d | %d | %.4f | %d |" % (
                prog, setup, r["seconds"], x, r["program_cpu"], r["server_cpu"], r["ctx"], r["branches"],
                r["ctx"] / r["branches"] if r["branches"] else 0, r["status"]["checkpoints"]))
    return "\n".join(lines)


def exits_table(results, programs):
    lines = ["| program | branches logged in the cache | exits: direct | indirect | log full | "
             "exits per 1,000 branches | of the exits, to code left to int3s | entries into the cache | "
             "ptrace tracer stops outside it | ptrace tracer single steps | blocks translated | left to int3s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for prog in programs:
        r = results[prog].get("translate")
        if r is None or "direct" not in r["status"]:
            continue
        s = r["status"]
        exits = s["direct"] + s["indirect"] + s["full"]
        lines.append("| %s | %d (%.1f%%) | %d | %d | %d | %.2f | %d | %d | %d | %d | %d | %d |" % (
            prog, s["logged"], 100.0 * s["logged"] / s["branches"] if s["branches"] else 0,
            s["direct"], s["indirect"], s["full"], 1000.0 * exits / s["branches"] if s["branches"] else 0,
            s["to_int3s"], s["entries"], s["ptrace_stops"], s["ptrace_steps"], s["translated"],
            s["untranslatable"]))
    lines += ["", "| program | code left to int3s: why | blocks | first | exits from the cache to them |",
              "|---|---|---:|---|---:|"]
    for prog in programs:
        r = results[prog].get("translate")
        if r is None:
            continue
        for reason, blocks, first, exits in sorted(r["status"].get("refusals", []), key=lambda x: -x[3]):
            lines.append("| %s | %s | %d | %s | %d |" % (prog, reason, blocks, first, exits))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", default="lua,zlib,sqlite3")
    parser.add_argument("--setups", default="native,int3,translate")
    parser.add_argument("--native-repeat", type=int, default=5)
    parser.add_argument("--trace-size", default="2048m",
                        help="btstub --trace-size (24 bytes a branch: 2048m holds 89 million)")
    parser.add_argument("--scale", type=int, default=1,
                        help="multiply Lua's n (3000) and zlib's KiB (256) by this: longer runs, where "
                             "what a recording costs per branch outweighs what it costs once "
                             "(translating the code, loading libraries); sqlite3 is unchanged")
    args = parser.parse_args()
    programs = args.programs.split(",")
    setups = args.setups.split(",")
    results = {}
    loads = []
    for prog in programs:
        argv = program_argv(prog, args.scale)
        results[prog] = {}
        print("running %s natively ..." % prog, file=sys.stderr, flush=True)
        native = measure_native(argv, args.native_repeat)
        if "native" in setups:
            results[prog]["native"] = native
        for setup in setups:
            if setup == "native":
                continue
            print("running %s under %s ..." % (prog, setup), file=sys.stderr, flush=True)
            loads.append(os.getloadavg()[0])
            r = measure_recorded(setup, argv, args.trace_size, native["output"])
            if r["status"]["dropped"]:
                print("WARNING: %s under %s: %d branches dropped (history bound)" % (
                    prog, setup, r["status"]["dropped"]), file=sys.stderr)
            results[prog][setup] = r
    print("real_programs_bench: %s, load average %s at the end (1-minute average at each "
          "recorded run's start: %s)" % (
              datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              " ".join("%.2f" % v for v in os.getloadavg()),
              ", ".join("%.1f" % v for v in loads)))
    print()
    print(table(results, programs, setups))
    print()
    if "translate" in setups:
        print(exits_table(results, programs))
        print()
    for prog in programs:
        n = results[prog].get("native")
        if n:
            print("%s native runs (s): %s" % (prog, ", ".join("%.4f" % v for v in n["runs"])))
        branch_counts = {s: results[prog][s]["branches"] for s in setups
                         if s in results[prog] and s not in ("native", "gdbserver")}
        print("%s branches stored per setup: %s; dropped: %s" % (
            prog, branch_counts, {s: results[prog][s]["status"]["dropped"] for s in branch_counts}))
    print()
    print("Commands:")
    print()
    for prog in programs:
        print("    " + shlex.join(program_argv(prog, args.scale)))
        for setup in setups:
            r = results[prog].get(setup)
            if r and "argv" in r:
                print("    " + shlex.join(r["argv"]))
    print()
    print("btstub's status at the end of each recorded run:")
    for prog in programs:
        for setup in setups:
            r = results[prog].get(setup)
            if r and "status_text" in r:
                print()
                print("%s, %s:" % (prog, setup))
                print(r["status_text"].strip())


if __name__ == "__main__":
    main()
