#!/usr/bin/env python3
"""Values in btstub's recorded past after a second thread was joined,
against gdb's record full; checkpoints are taken again after the join.

past_join.c at -O0 and -O2 creates a thread, joins it, then works alone.

  reference  native gdb runs it (no shell, the environment of
             test_past_values), stops at MARK joined (just after
             pthread_join returned) and starts `record full` there;
  subject    gdb -> `btstub --record --trace-size=16m --checkpoint-every=700
             - PROG` (the history reaches back past the thread; gdb runs no
             `record`; the work after the join, some 10,000 branches, is
             due several checkpoints at this spacing), the same
             breakpoint. With --server gdbserver: gdb -> gdbserver with
             `record full` on gdb's side (proves the comparison).

Both continue live to MARK finish_line and walk back: reverse-continue to
work_done twice, reverse-continue to joined, then next, step, reverse-stepi
and continue to the end of the history. At each point the probe of
test_past_longjmp (frame, args, locals, bt, info frame, registers, stack)
and the globals are compared with record full's. At joined record full's
history ends ("No more reverse-execution history") where btstub's goes on,
so there each side's point must equal its own live stop at joined instead:
the point right after the join, where the ended thread used to keep btstub
from taking a checkpoint (it stayed in the thread list until the client's
next stop), so that every value there was unavailable.

Under btstub `monitor record status` must count more checkpoints at
finish_line than at joined; `info threads` at live stops (in the thread,
after the join) equals gdbserver's.

    python3 test_past_join.py [--server gdbserver] [--opt O0|O2] [-v]
"""

import argparse
import os
import re
import shlex
import sys

from harness import marker_line, normalise as server_normalise, program, run_gdb, run_test, \
    server_path, stdio_target, unified_diff
from test_past_longjmp import KINDS, PROBE_DEFINITION, point_view, run_commands
from test_past_values import environment_args

SOURCE = "past_join.c"
GLOBALS = ("python print('@@GLOBALS %s %s %s' % tuple(str(gdb.parse_and_eval(v)) "
           "for v in ('g_worker', 'g_rounds', 'g_acc')))")
STATUS = "monitor record status"
AT_JOINED = "reverse-continue to joined"


def brk(mark):
    return "break %s:%d" % (SOURCE, marker_line(SOURCE, mark))


def walk():
    def to(mark):
        return [brk(mark), "reverse-continue", "delete"]
    return [
        (to("work_done"), "reverse-continue to work_done"),
        (to("work_done"), "reverse-continue to work_done again"),
        (to("joined"), AT_JOINED),
        (["next"], "next"),
        (["step"], "step into work"),
        (["reverse-stepi"], "reverse-stepi"),
        (["continue"], "continue to the end of the history"),
    ]


def script(start, status):
    """Returns (commands, points, index of the live probe at joined)."""
    cmds = ["set sysroot /", PROBE_DEFINITION, brk("joined")] + start
    live_start = len(cmds)
    cmds += ["python past_probe('start')", GLOBALS] + status
    cmds += ["delete", brk("finish_line"), "continue", "delete"] + status
    points = [("live at finish_line", [], len(cmds))]
    cmds.append("python past_probe(0)")
    for motions, tag in walk():
        first = len(cmds)
        cmds += motions + [GLOBALS]
        points.append((tag, list(range(first, len(cmds))), len(cmds)))
        cmds.append("python past_probe(%d)" % (len(points) - 1))
    return cmds, points, live_start


def run_side(mode, prog):
    target, status = None, []
    if mode == "native":
        start = (["set startup-with-shell off", "unset environment"] +
                 ["set environment " + kv for kv in environment_args()] + ["run", "record full"])
    elif mode == "gdbserver":
        target = "| " + shlex.join(["env", "-i"] + environment_args() +
                                   [server_path("gdbserver"), "--no-startup-with-shell", "-", prog])
        start = ["continue", "record full"]
    else:
        target = "| " + shlex.join(["env", "-i"] + environment_args() +
                                   [server_path("btstub"), "--no-startup-with-shell", "--record", "--trace-size=16m",
                                    "--checkpoint-every=700", "-", prog])
        start, status = ["continue"], [STATUS]
    commands, points, live_start = script(start, status)
    result, left = run_commands(prog, target, commands)
    result.points, result.live_start = points, live_start
    return result, left


def view(result, point):
    """point_view with the globals printed after the motion apart."""
    v = point_view(result, point)
    motion, _, globals_ = v["motion"].partition("(gdb) python print('@@GLOBALS")
    # Natively gdb saw the second thread, through a pipe it never stopped
    # while it lived (as with gdbserver): only its stop message differs.
    v["motion"] = re.sub(r'^Thread \d+ "[^"]*" hit ', "", motion, flags=re.M)
    v["globals"] = globals_.partition("\n")[2]
    return v


def check_threads(opt, prog, c):
    """`info threads` at live stops equals gdbserver's."""
    cmds = ["set sysroot /", "break worker", "continue", "info threads", "delete", brk("joined"),
            "continue", "info threads"]
    got = {}
    for kind in ("gdbserver", "btstub"):
        args = ["--record"] if kind == "btstub" else []
        target = "| " + shlex.join([server_path(kind)] + args + ["-", prog])
        r = run_gdb(cmds, prog, target, timeout=120)
        got[kind] = (r, [server_normalise(r.of(i)) for i in (3, 7)])
    # In the thread, where the main thread is (creating it or joining)
    # depends on timing: only the selected thread's line is compared.
    selected = {k: [line for line in v[1][0] if line.startswith("*")] for k, v in got.items()}
    c.equal("%s: info threads in the thread: the selected one equals gdbserver's" % opt,
            selected["gdbserver"], selected["btstub"], got["btstub"][0].transcript())
    c.true("%s: info threads in the thread lists two" % opt,
           len([line for line in got["btstub"][1][0] if re.match(r"^[* ] +\d+ ", line)]) == 2,
           got["btstub"][0].transcript())
    c.equal("%s: info threads after the join equals gdbserver's" % opt, got["gdbserver"][1][1],
            got["btstub"][1][1], got["btstub"][0].transcript())


def checkpoints(text):
    m = re.search(r"^Checkpoints: (\d+) ", text, re.M)
    return int(m.group(1)) if m else None


def check(mode, opt, c):
    prog = os.path.abspath(program("past_join", opt))
    ref, ref_left = run_side("native", prog)
    sub, sub_left = run_side(mode, prog)
    c.equal("%s: record full leaves no process" % opt, [], ref_left)
    c.equal("%s: %s leaves no process" % (opt, mode), [], sub_left)
    all_ref = "".join(ref.of(p[2]) for p in ref.points)
    c.not_contains("%s: record full shows every value" % opt, all_ref, "<unavailable>")
    c.true("%s: record full probed every point" % opt,
           all("@@END" in ref.of(p[2]) for p in ref.points), ref.transcript())
    joined = [i for i, p in enumerate(ref.points) if p[0] == AT_JOINED][0]
    c.contains("%s: record full's history starts at joined" % opt, view(ref, ref.points[joined])["motion"],
               "No more reverse-execution history.")
    for who, r in (("record full", ref), (mode, sub)):
        live = view(r, ("live", [], r.live_start))
        past = view(r, r.points[joined])
        live["globals"] = r.of(r.live_start + 1)
        past["globals"] = re.sub(r"^.*?@@GLOBALS", "@@GLOBALS", past["globals"], flags=re.S)
        live["globals"] = re.sub(r"^.*?@@GLOBALS", "@@GLOBALS", live["globals"], flags=re.S)
        for kind in [k for k, _ in KINDS] + ["globals"]:
            c.equal("%s: %s after the join equals the live stop there: %s" % (opt, who, kind),
                    live[kind], past[kind])
    for n, point in enumerate(ref.points):
        a, b = view(ref, point), view(sub, sub.points[n])
        for kind in a:
            if n == joined and kind == "motion":
                continue  # compared with each side's live stop above
            label = "%s: point %d (%s): %s" % (opt, n, point[0], kind)
            if a[kind] == b[kind]:
                c.true(label, True)
            else:
                c.true(label, False, unified_diff(a[kind].splitlines(), b[kind].splitlines(),
                                                  "record full", mode))
    if mode == "btstub":
        counts = [checkpoints(sub.of(i)) for i, cmd in enumerate(sub.commands) if cmd == STATUS]
        c.true("%s: checkpoints are taken after the join (%s)" % (opt, counts),
               len(counts) == 2 and None not in counts and counts[1] > counts[0], sub.transcript())
        check_threads(opt, prog, c)


def main(args, c):
    for opt in ([OPTIONS.opt] if OPTIONS.opt else ["O0", "O2"]):
        check(args.server, opt, c)


OPTIONS = argparse.Namespace(opt=None)

if __name__ == "__main__":
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--opt", choices=["O0", "O2"], help="one build only")
    OPTIONS, rest = own.parse_known_args()
    sys.argv = sys.argv[:1] + rest
    run_test("test_past_join", main)
