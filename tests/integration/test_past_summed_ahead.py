#!/usr/bin/env python3
"""The history is summed up in the client's idle time, and the past it
serves is the live program's.

Where btstub reads the past from the history alone (a program with several
threads, or no checkpoints), a read far back passes whole runs of 4,096
blocks by their summaries (docs/past-state.md). They used to be made
before each stop reply, so a long `continue` in a threaded program waited
for them at its stop (about twice its recording time under the translating
tracer). Now the stop is answered first; btstub sums up the runs while
gdb sends nothing, a couple at a time, and a reverse resume finishes what
is left before it starts.

record_workload.c (O0, O2) with a second thread waiting on a mutex
(`thread`: no copies) runs 3,000 rounds (about 100 runs of history) under
`btstub --record`, stopped at bench_end. After an idle pause `monitor
replay status` says every whole run is summed up. reverse-continue then
stops at round_work's last call (r = 2999), where `bt` (functions, pcs),
rip, rsp, rbp and `info frame`'s saved rip must equal a live stop at the
same call (no recording: round_work's 3,000th hit). The same session
without the pause (reverse-continue right after the stop) must answer the
same, with every run summed up once it stands in the past.

    python3 test_past_summed_ahead.py [-v]
"""

import re

from harness import program, run_gdb_tcp, run_test

ROUNDS = 3000

AT_LAST_CALL = ["bt", "info registers rip rsp rbp", "info frame"]

RECORDED = [
    "break round_work", "break bench_end", "disable 1",     # 0-2
    "continue",                                             # 3: bench_end, live
    "shell sleep 2",                                        # 4: gdb sends nothing
    "monitor replay status",                                # 5
    "enable 1", "reverse-continue",                         # 6-7: round_work, r = 2999
] + AT_LAST_CALL + ["monitor replay status"]                # 8-10, 11

NO_PAUSE = [
    "break round_work", "break bench_end", "disable 1",     # 0-2
    "continue",                                             # 3
    "enable 1", "reverse-continue",                         # 4-5
] + AT_LAST_CALL + ["monitor replay status"]                # 6-8, 9

LIVE = ["break round_work", "ignore 1 %d" % (ROUNDS - 1), "continue"] + AT_LAST_CALL  # 0-2, 3-5

SUMMED = re.compile(r"history summed up for reads far back: (\d+) of (\d+) runs")


def frames(bt):
    """The pc (none for the innermost) and function of each frame."""
    return re.findall(r"^#\d+\s+(?:(0x[0-9a-f]+) in )?(\w+) \(", bt, re.M)


def registers(text):
    return dict(re.findall(r"^(rip|rsp|rbp)\s+(0x[0-9a-f]+)", text, re.M))


def summed_up(status):
    """(summed, whole) of the thread with the most history."""
    counts = [(int(a), int(b)) for a, b in SUMMED.findall(status)]
    return max(counts, key=lambda c: c[1]) if counts else None


def check_at_last_call(c, label, result, first, live, ctx):
    c.matches("%s: reverse-continue stops at round_work's last call" % label, result.of(first - 1),
              r"Breakpoint 1, .*round_work", ctx)
    c.equal("%s: bt in the past, as live" % label, frames(live.of(3)), frames(result.of(first)), ctx)
    c.equal("%s: rip, rsp, rbp in the past, as live" % label, registers(live.of(4)), registers(result.of(first + 1)),
            ctx)
    saved_rip = re.compile(r"saved rip = (0x[0-9a-f]+)")
    c.equal("%s: the saved rip (return address) in the past, as live" % label, saved_rip.findall(live.of(5)),
            saved_rip.findall(result.of(first + 2)), ctx)


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    for opt in ("O0", "O2"):
        prog = program("record_workload", opt)
        prog_args = [str(ROUNDS), "thread"]
        live, _ = run_gdb_tcp("btstub", prog, prog_args, LIVE)
        c.true("%s: the live run stops at round_work's last call" % opt,
               "Breakpoint 1, " in live.of(2) and len(frames(live.of(3))) >= 2 and "saved rip = 0x" in live.of(5) and
               set(registers(live.of(4))) == {"rip", "rsp", "rbp"}, live.transcript())

        result, server = run_gdb_tcp("btstub", prog, prog_args, RECORDED, options=("--once", "--record"))
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.matches("%s: stopped at bench_end" % opt, result.of(3), r"Breakpoint 2, .*bench_end", ctx)
        summed = summed_up(result.of(5))
        c.true("%s: after an idle pause every whole run is summed up (about 100)" % opt,
               summed is not None and summed[1] >= 50 and summed[0] == summed[1], ctx)
        check_at_last_call(c, opt, result, 8, live, ctx)

        result, server = run_gdb_tcp("btstub", prog, prog_args, NO_PAUSE, options=("--once", "--record"))
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        label = opt + ", no pause"
        check_at_last_call(c, label, result, 6, live, ctx)
        summed = summed_up(result.of(9))
        c.true("%s: in the past every whole run is summed up" % label,
               summed is not None and summed[1] >= 50 and summed[0] == summed[1], ctx)


if __name__ == "__main__":
    run_test("test_past_summed_ahead", main)
