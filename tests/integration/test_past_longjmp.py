#!/usr/bin/env python3
"""bt in the recorded past through frames older than the history and
across longjmp, against gdb's record full.

past_longjmp.c at -O0 and -O2:

  reference  native gdb runs it (no shell, the same environment as
             test_past_values), stops at MARK deep_start (chain_leaf, five
             frames below main) and starts `record full` there;
  subject    gdb -> `btstub - PROG` through a pipe, the same breakpoint,
             then `monitor record start` there (btstub records from that
             stop on, gdb runs no `record`). With --server gdbserver: gdb
             -> gdbserver with `record full` on gdb's side (proves the
             comparison); --self: native record full again.

Both continue live (returning through the frames entered before the
history began, calling new ones, a longjmp out of four frames, a
siglongjmp out of a signal handler and two frames) to MARK sig_jumped, and
walk back: reverse-stepi and reverse-step across the siglongjmp and the
longjmp, reverse-stepi on until the handler or jump_leaf is the frame
again (the count must be the same), reverse-continue to breakpoints inside
the innermost functions (the handler, jump_leaf), reverse-finish from
them, `finish` forward to a value, and reverse-continue to the history's
start. At each point a probe prints the frame, `info args`, `info
locals`, `bt` (with arguments), `info frame` at levels 2 and 3, `up` and
`info locals` there, rip/rsp/rbp/rax/rbx/rdi/rsi and `x/4xg $sp`; the
motion's own output (finish's "Value returned") is compared too. One check
per point and kind.

The point at the history's start must also equal the live stop there
(taken before recording started), on both sides: so record full's own
reverse run is checked, and a probe that shows the live state (or the
end) instead of the past fails.

Inside __longjmp record full itself can be wrong (gdb 13 does not undo
every write to r8-r15, which longjmp restores: at -O2 a caller's frame
then unwinds wrongly). At those points (all reached by reverse motions,
so in known time order) a live native run stopping at the same pc is the
reference for btstub instead, and NOTE lines say where record full
differs from it.

    python3 test_past_longjmp.py [--server gdbserver] [--self] [--opt O0|O2] [-v]
"""

import argparse
import os
import re
import shlex
import sys

from harness import live_fallback, marker_line, program, run_test, server_path, unified_diff
from test_past_values import coincidences, environment_args, motion_text, normalise, run_commands, tokenise

SOURCE = "past_longjmp.c"
REGISTERS = "rip rsp rbp rax rbx rdi rsi"
KINDS = [("frame", ["frame"]), ("args", ["info args"]), ("locals", ["info locals"]),
         ("bt", ["bt"]), ("frame 2", ["info frame level 2"]), ("frame 3", ["info frame level 3"]),
         ("up", ["up", "info locals", "down"]), ("registers", ["info registers " + REGISTERS]),
         ("stack", ["x/4xg $sp"])]
PROBE_COMMANDS = [cmd for _, cmds in KINDS for cmd in cmds]

# One gdb command per probe: each command's output under a header, errors
# included (gdb's text, as the command would print it).
PROBE_CODE = """
def past_probe(tag):
  print('@@POINT %s' % tag)
  for cmd in COMMANDS:
    print('@@CMD %s' % cmd)
    try:
      out = gdb.execute(cmd, to_string=True)
    except gdb.error as e:
      out = 'error: %s\\n' % e
    print(out, end='')
  print('@@END')

def back_into(name):
  for n in range(1, 400):
    gdb.execute('reverse-stepi', to_string=True)
    f = gdb.selected_frame().function()
    if f is not None and f.name == name:
      print('@@BACK %d reverse-stepi into %s' % (n, name))
      return
  print('@@BACK not in %s after 400 reverse-stepi' % name)
""".replace("COMMANDS", repr(PROBE_COMMANDS))
PROBE_DEFINITION = "python exec(%r)" % PROBE_CODE

# The values that differ between runs, read live at sig_jumped.
VARYING = ("python print('@@VARY pid=%d canary=%d' % (gdb.selected_inferior().pid, "
           "int(gdb.parse_and_eval('*(unsigned long *)($fs_base + 0x28)'))))")

NO_HISTORY = "No more reverse-execution history."


def brk(mark):
    return "break %s:%d" % (SOURCE, marker_line(SOURCE, mark))


def walk():
    """(motion commands, tag) for each point after the live one, in order."""
    def to(mark, motion="reverse-continue"):
        return [brk(mark), motion, "delete"]
    return [
        (["reverse-stepi"], "reverse-stepi from sig_jumped"),
        (["reverse-stepi"], "reverse-stepi"),
        (["reverse-stepi"], "reverse-stepi"),
        (["reverse-step"], "reverse-step across the siglongjmp"),
        (["python back_into('on_usr1')"], "reverse-stepi on into the handler"),
        (to("handler"), "reverse-continue to the handler"),
        (["reverse-finish"], "reverse-finish from the handler"),
        (to("raise"), "reverse-continue to raise in sig_leaf"),
        (to("jumped"), "reverse-continue to jumped (after the longjmp)"),
        (["reverse-stepi"], "reverse-stepi from jumped"),
        (["reverse-stepi"], "reverse-stepi"),
        (["reverse-stepi"], "reverse-stepi"),
        (["reverse-step"], "reverse-step across the longjmp"),
        (["reverse-step"], "reverse-step"),
        (["python back_into('jump_leaf')"], "reverse-stepi on into jump_leaf"),
        (to("jump_leaf"), "reverse-continue to jump_leaf"),
        (["reverse-finish"], "reverse-finish from jump_leaf"),
        (["reverse-finish"], "reverse-finish from jump3"),
        (to("after_leaf"), "reverse-continue to after_leaf"),
        (["finish"], "finish from after_leaf"),
        (to("chain1_back"), "reverse-continue to chain1_back"),
        (["reverse-step"], "reverse-step into chain2"),
        (["reverse-step"], "reverse-step into chain3"),
        (["reverse-continue"], "reverse-continue to the history's start"),
        (["reverse-stepi"], "reverse-stepi at the start"),
        (["next"], "next from the start"),
        (["finish"], "finish from chain_leaf"),
        (["finish"], "finish from chain4"),
    ]


def script(start):
    """gdb commands after the connection; start: the commands that get to
    deep_start and start recording there. Returns (commands, points,
    index of the live probe at deep_start), each point (tag, indexes of its
    motion commands, index of its probe)."""
    cmds = ["set sysroot /", "handle SIGUSR1 nostop noprint pass", PROBE_DEFINITION,
            brk("deep_start")] + start
    live_start = len(cmds)
    cmds += ["python past_probe('start')", "delete", brk("sig_jumped"), "continue", "delete",
             VARYING]
    points = [("live at sig_jumped", [], len(cmds))]
    cmds.append("python past_probe(0)")
    for motions, tag in walk():
        first = len(cmds)
        cmds += motions
        points.append((tag, list(range(first, len(cmds))), len(cmds)))
        cmds.append("python past_probe(%d)" % (len(points) - 1))
    return cmds, points, live_start


def native_start():
    return (["set startup-with-shell off", "unset environment"] +
            ["set environment " + kv for kv in environment_args()] + ["run"])


def recording_side(mode, prog):
    """(target, commands that start recording at the first breakpoint) of
    one side: native record full, gdbserver with record full on gdb's
    side, or btstub's own `monitor record start`."""
    if mode == "native":
        return None, native_start() + ["record full"]
    # No shell on either side: the native run's stack is a direct exec's.
    server = [server_path(mode), "--no-startup-with-shell", "-", prog]
    target = "| " + shlex.join(["env", "-i"] + environment_args() + server)
    return target, ["continue", "record full" if mode == "gdbserver" else "monitor record start"]


def run_side(mode, prog):
    """Runs one side; returns (GdbResult, leftover processes of the program)."""
    target, start = recording_side(mode, prog)
    commands, points, live_start = script(start)
    result, left = run_commands(prog, target, commands)
    result.points, result.live_start = points, live_start
    return result, left


def inside_longjmp(ref):
    """{point: rip} of record full's points inside __longjmp, up to the
    point back in jump_leaf: all reached by reverse motions only, so
    later points are earlier in time."""
    last = [i for i, p in enumerate(ref.points) if p[0] == "reverse-stepi on into jump_leaf"][0]
    found = {}
    for n in range(1, last):
        view = point_view(ref, ref.points[n])
        m = re.search(r"^rip 0x([0-9a-f]+) ", view["registers"], re.M)
        if "__longjmp ()" in view["frame"] and m:
            found[n] = int(m.group(1), 16)
    return found


def run_truth(prog, stops):
    """Native, no recording: from deep_start, stops live at each of
    stops ({point: rip}) in time order, the next time its rip is reached.
    Returns (GdbResult with .probes {point: probe index}, leftovers)."""
    cmds = ["set sysroot /", "handle SIGUSR1 nostop noprint pass", PROBE_DEFINITION,
            brk("deep_start")] + native_start() + ["delete"]
    probes = {}
    for n in sorted(stops, reverse=True):
        cmds += ["tbreak *0x%x" % stops[n], "continue"]
        probes[n] = len(cmds)
        cmds.append("python past_probe('truth %d')" % n)
    cmds.append(VARYING)
    result, left = run_commands(prog, None, cmds)
    result.probes = probes
    return result, left


def point_view(result, point):
    """{kind: normalised text} of one point, the motion's output as 'motion'."""
    tag, motions, probe = point
    # In the order run: `info locals` comes twice (here and after `up`).
    outputs = [part.partition("\n") for part in result.of(probe).split("@@CMD ")[1:]]
    outputs = [body.split("@@END")[0] for _, _, body in outputs]
    view = {"motion": motion_text(result, motions)}
    first = 0
    for kind, kind_cmds in KINDS:
        view[kind] = "".join("(gdb) %s\n%s" % (c, outputs[first + i] if first + i < len(outputs)
                                               else "<not run>\n") for i, c in enumerate(kind_cmds))
        first += len(kind_cmds)
    return {k: normalise(tokenise(v, varying(result))) for k, v in view.items()}


def varying(result):
    """raise() leaves the thread id in registers and on the stack and
    glibc's stack canary on the stack: each run's own values."""
    m = re.search(r"^@@VARY pid=(\d+) canary=(\d+)$", result.output, re.M)
    return {"<PID>": {int(m.group(1))}, "<CANARY>": {int(m.group(2))}} if m else {}


def run_pair(mode, prog):
    """Both runs, again (up to three times) while a value varying in one is
    also the text of a fixed number in the other (pids are small numbers
    once they wrap: 377 stood in an octal escape, 60 could be a line)."""
    for _ in range(3):
        ref, ref_left = run_side("native", prog)
        sub, sub_left = run_side(mode, prog)
        vr, vs = varying(ref), varying(sub)
        if not coincidences(vr, vs, sub.output) and not coincidences(vs, vr, ref.output):
            break
        print("NOTE a varying value is also a fixed number in the other run: running both again",
              flush=True)
    return ref, ref_left, sub, sub_left


def check_start(opt, who, result, c):
    """The point at the history's start equals the live stop there."""
    n = [i for i, p in enumerate(result.points) if p[0] == "reverse-continue to the history's start"][0]
    live = point_view(result, ("live start", [], result.live_start))
    past = point_view(result, result.points[n])
    for kind, _ in KINDS:
        c.equal("%s: %s at the history's start equals the live stop there: %s" % (opt, who, kind),
                live[kind], past[kind])


def check_reference(opt, prog, ref, c):
    """Inside __longjmp record full can be wrong: gdb 13 does not undo
    every write to r8-r15 (see test_past_values), and longjmp restores
    r12-r15, so a caller's frame may unwind wrongly there. At those points
    a live stop is the reference. Returns {point: its view}."""
    stops = inside_longjmp(ref)
    c.true("%s: some points stand inside __longjmp" % opt, len(stops) >= 2, ref.transcript())
    truth, left = run_truth(prog, stops)
    c.equal("%s: the live run leaves no process" % opt, [], left)
    views = {}
    for n in stops:
        live = point_view(truth, ("truth", [], truth.probes[n]))
        c.equal("%s: the live stop for point %d is at its pc" % (opt, n), "rip 0x%x" % stops[n],
                live["registers"].splitlines()[1].split(" ")[0] + " " +
                live["registers"].splitlines()[1].split(" ")[1], truth.transcript())
        wrong = [k for k, _ in KINDS if live[k] != point_view(ref, ref.points[n])[k]]
        if wrong:
            print("NOTE %s: record full at point %d differs from a live stop there in %s (the live "
                  "stop is the reference)" % (opt, n, ", ".join(wrong)), flush=True)
            live_fallback()
        views[n] = live
    return views


def check(mode, opt, c):
    # Absolute, as native gdb runs it: the path is on the program's stack.
    prog = os.path.abspath(program("past_longjmp", opt))
    ref, ref_left, sub, sub_left = run_pair(mode, prog)
    c.equal("%s: record full leaves no process" % opt, [], ref_left)
    c.equal("%s: %s leaves no process" % (opt, mode), [], sub_left)
    for who, r in (("record full", ref), (mode, sub)):
        c.matches("%s: %s tells the pid and canary" % (opt, who), r.output,
                  r"(?m)^@@VARY pid=[1-9]\d* canary=[1-9]\d*$")
    all_ref = "".join(ref.of(p[2]) for p in ref.points)
    c.not_contains("%s: record full shows every value" % opt, all_ref, "<unavailable>")
    c.true("%s: record full probed every point" % opt,
           all("@@END" in ref.of(p[2]) for p in ref.points), ref.transcript())
    c.true("%s: record full reaches the history's start" % opt, NO_HISTORY in ref.output,
           ref.transcript())
    for name in ("on_usr1", "jump_leaf"):
        c.matches("%s: record full's reverse-stepi gets back into %s" % (opt, name), ref.output,
                  r"(?m)^@@BACK \d+ reverse-stepi into %s$" % name)
    check_start(opt, "record full", ref, c)
    check_start(opt, mode, sub, c)
    c.equal("%s: %s runs the same script from deep_start" % (opt, mode),
            ref.commands[ref.live_start:], sub.commands[sub.live_start:])
    truths = check_reference(opt, prog, ref, c) if mode == "btstub" else {}
    for n, point in enumerate(ref.points):
        a, b = point_view(ref, point), point_view(sub, sub.points[n])
        for kind in truths.get(n, {}):
            if kind != "motion":
                a[kind] = truths[n][kind]
        for kind in a:
            label = "%s: point %d (%s): %s" % (opt, n, point[0], kind)
            if a[kind] == b[kind]:
                c.true(label, True)
            else:
                c.true(label, False, unified_diff(a[kind].splitlines(), b[kind].splitlines(),
                                                  "record full", mode))
    c.equal("%s: history runs out as often" % opt, ref.output.count(NO_HISTORY),
            sub.output.count(NO_HISTORY), sub.transcript())


def main(args, c):
    mode = "native" if OPTIONS.self_check else args.server
    for opt in ([OPTIONS.opt] if OPTIONS.opt else ["O0", "O2"]):
        check(mode, opt, c)


OPTIONS = argparse.Namespace(self_check=False, opt=None)

if __name__ == "__main__":
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--self", dest="self_check", action="store_true",
                     help="compare record full with a second record full run")
    own.add_argument("--opt", choices=["O0", "O2"], help="one build only")
    OPTIONS, rest = own.parse_known_args()
    sys.argv = sys.argv[:1] + rest
    run_test("test_past_longjmp", main)
