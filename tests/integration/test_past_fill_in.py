#!/usr/bin/env python3
"""Checkpoints filled in while the client is idle give the same past as
re-runs from the checkpoints the recording took.

Under the translating tracer btstub takes its periodic checkpoints 4
million branches apart while recording and, once the program is stopped
and the client sends nothing, fills the stretches in every 100,000
branches, each a copy of the checkpoint before re-run that far
(stub/replay/past_state.h, fill_in). bench_checkpoints_O2 3 1000000 0 runs
three rounds of a million iterations of a 64-bit LCG between bench_begin
and bench_end with no system call: one stretch of 3 million branches
after the last checkpoint the recording took (before main).

gdb over `btstub --record` (no `record` on gdb's side) continues to
bench_end, then goes back to work()'s entry of rounds 3 and 2 (a
reverse-continue each) and reads rdi (x going into the round), rsi (its
iterations) and rounds_done there. x is the LCG's value after 2 and 1
million iterations, computed here: a copy re-run from a wrong checkpoint
shows another. Then it continues to the end, where the program prints x
after three rounds.

Four sessions:
  idle     the default, gdb idle at bench_end (but for a `monitor record
           status` every half second, up to 60 s) until btstub has filled
           in 20 or more ("filled in later"), and the copy at round 2's entry was re-run from a
           checkpoint within 150,000 branches of it (`monitor replay
           status` names the checkpoint's branch);
  at once  the default, going back with no wait: whatever was filled in
           by then, the same values;
  replaying  the default, going back to round 3 at once, then idle there
           (as in `idle`) until 20 or more are filled in: the copy at
           round 2's entry comes from a checkpoint filled in while the
           client replayed, within 150,000 branches of it;
  no fill  `--checkpoint-every=4000000`: the same spacing while recording,
           nothing filled in after 2 s of idle ("0 filled in later"), the copy re-run from
           the checkpoint before main, more than 900,000 branches before
           the one the idle session used.

    python3 test_past_fill_in.py [-v]
"""

import re
import shlex

from bench_checkpoints_lcg import lcg_after
from harness import program, run_gdb, run_test, server_path

ROUNDS, INNER = 3, 1000000
RECORD_STATUS = "monitor record status"
REPLAY_STATUS = "monitor replay status"
READ = ["info registers rdi rsi", "print rounds_done"]


# gdb-side: up to 60 s (a sanitizer build fills in slower), the client
# idle but for a `monitor record status` every half second, until 20 are
# filled in.
WAIT_FOR_FILL_IN = "python exec(%r)" % (
    "import re, time\n"
    "for _ in range(120):\n"
    "    m = re.search(r'(\\d+) filled in later', gdb.execute('monitor record status', to_string=True))\n"
    "    if m and int(m.group(1)) >= 20: break\n"
    "    time.sleep(0.5)\n")


def motions(wait, wait_replaying):
    """wait: None (going back at once), a gdb command that waits at the
    live end; wait_replaying: the same after the first step back."""
    return (["break bench_end", "continue"] + ([wait] if wait else []) +
            [RECORD_STATUS, "delete", "break *work",
             "reverse-continue"] + READ + [REPLAY_STATUS] +
            ([wait_replaying, RECORD_STATUS] if wait_replaying else []) +
            ["reverse-continue"] + READ + [REPLAY_STATUS] +
            ["delete", "continue", "continue"])


def session(prog, options, wait, wait_replaying=None):
    target = "| " + shlex.join([server_path("btstub"), "--record", "--trace-size=256m"] + options +
                               ["-", prog, str(ROUNDS), str(INNER), "0"])
    return run_gdb(["break main", "continue"] + motions(wait, wait_replaying), prog, target, timeout=240)


def reads(result):
    """(rdi, rsi, rounds_done) at each of the two reverse-continues."""
    out = []
    for cmd, text in result.outputs:
        if cmd == "info registers rdi rsi":
            rdi = re.search(r"^rdi +(0x[0-9a-f]+)", text or "", re.M)
            rsi = re.search(r"^rsi +(0x[0-9a-f]+)", text or "", re.M)
            out.append([int(rdi.group(1), 16) if rdi else None, int(rsi.group(1), 16) if rsi else None])
        elif cmd == "print rounds_done":
            m = re.search(r"= (-?\d+)", text or "")
            if out:
                out[-1].append(int(m.group(1)) if m else None)
    return [tuple(r) for r in out]


def filled_in(result):
    """As the last `monitor record status` says."""
    texts = [text or "" for cmd, text in result.outputs if cmd == RECORD_STATUS]
    m = re.search(r"(\d+) filled in later", texts[-1] if texts else "")
    return int(m.group(1)) if m else None


def checkpoint_branches(result):
    """The checkpoint each copy was re-run from, by branch (monitor replay status)."""
    return [int(m.group(1)) if m else None
            for m in (re.search(r"re-run from the checkpoint at branch (\d+)", text or "")
                      for cmd, text in result.outputs if cmd == REPLAY_STATUS)]


def main(args, c):
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return
    prog = program("bench_checkpoints", "O2")
    expected = [(lcg_after(2, INNER), INNER, 2), (lcg_after(1, INNER), INNER, 1)]
    final = str(lcg_after(3, INNER))
    runs = {"idle": session(prog, [], wait=WAIT_FOR_FILL_IN),
            "at once": session(prog, [], wait=None),
            "replaying": session(prog, [], wait=None, wait_replaying=WAIT_FOR_FILL_IN),
            "no fill": session(prog, ["--checkpoint-every=4000000"], wait="shell sleep 2")}
    for name, result in runs.items():
        c.equal("%s: x, the iterations and rounds_done at rounds 3 and 2" % name, expected, reads(result),
                result.transcript())
        # --record holds the program at its exit_group.
        c.true("%s: the program ran on to its end and printed x after three rounds" % name,
               final in result.output and "__GI__exit" in result.output, result.transcript())
    idle, no_fill = runs["idle"], runs["no fill"]
    for name in ("idle", "replaying"):
        c.true("%s: 20 or more checkpoints filled in (%s)" % (name, filled_in(runs[name])),
               (filled_in(runs[name]) or 0) >= 20, runs[name].transcript())
    c.equal("no fill: none filled in", 0, filled_in(no_fill), no_fill.of_command(RECORD_STATUS) or "")
    near, far = checkpoint_branches(idle), checkpoint_branches(no_fill)
    c.true("the copies came from a filled-in checkpoint near the point, not the one before main (%s, %s)" %
           (near, far),
           len(near) == 2 and len(far) == 2 and None not in near + far and near[1] > far[1] + 900000,
           idle.transcript() + no_fill.transcript())
    replayed = checkpoint_branches(runs["replaying"])
    c.true("replaying: the copy at round 2 came from a checkpoint filled in meanwhile (%s, %s)" % (replayed, far),
           len(replayed) == 2 and None not in replayed + far and replayed[1] > far[1] + 900000,
           runs["replaying"].transcript() + no_fill.transcript())


if __name__ == "__main__":
    run_test("test_past_fill_in", main)
