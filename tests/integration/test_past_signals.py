#!/usr/bin/env python3
"""Signals in the recorded past, against gdb's record full.

past_signals.c at -O0 and -O2 raises SIGUSR1 (handled), SIGWINCH (ignored:
delivered, no handler), sends itself SIGUSR2 with kill() (handled), and
raises SIGUSR2 while it is blocked (delivered when unblocked).

  reference  native gdb runs it (no shell, the environment of
             test_past_values), stops at MARK start and starts `record
             full` there;
  subject    gdb -> `btstub - PROG` through a pipe, the same breakpoint,
             then `monitor record start` there (gdb runs no `record`).
             With --server gdbserver: `record full` on gdb's side over
             gdbserver (proves the comparison).

Both continue live to MARK done (stopping at the signals gdb's `handle`
stops for), then go back with reverse-continue until the history's start,
forward again with continue until its end, and back into on_usr1 by a
breakpoint, reverse-stepi out of it to the delivery and on before it, and
stepi forward into the handler again. record full stops where each signal
was delivered, in both directions, reporting it ("Program received
signal"), and takes the delivery as a step of its own (a reverse-stepi
from there stays at the pc); each motion's output, the frame and rip, rsp
and eflags after it must be the same. No process of the program may be
left.

    python3 test_past_signals.py [--server gdbserver] [-v]
"""

import re

from harness import marker_line, program, run_test
from test_past_longjmp import native_start, recording_side
from test_past_values import environment_args, normalise, run_commands

SOURCE = "past_signals.c"
NO_HISTORY = "No more reverse-execution history."
# Not rax or rdi: around kill() they hold the pid, which differs between runs.
PROBE = ["frame", "info registers rip rsp eflags"]
# reverse-stepi until the frame is not `name`'s; the count is compared.
BACK_OUT = """
def back_out_of(name):
  for n in range(1, 100):
    out = gdb.execute('reverse-stepi', to_string=True)
    f = gdb.selected_frame().function()
    if f is None or f.name != name:
      print('%d reverse-stepi out of %s:' % (n, name))
      print(out, end='')
      return
  print('still in %s after 100 reverse-stepi' % name)
"""


def brk(mark):
    return "break %s:%d" % (SOURCE, marker_line(SOURCE, mark))


def motions():
    """Back to the history's start (three signal stops), forth to its end
    (the same three), back into on_usr1 (past two signals and a handler),
    out of it by reverse-stepi to its delivery, and into it again."""
    back = [["reverse-continue"]] * 4
    forth = [["continue"]] * 4
    handler = [[brk("on_usr1")], ["reverse-continue"], ["reverse-continue"], ["reverse-continue"], ["delete"]]
    # The delivery is a step of its own: the first reverse-stepi after it
    # stays at the pc, a stepi from there delivers it again.
    return (back + forth + handler + [["python back_out_of('on_usr1')"]] + [["reverse-stepi"]] * 2 +
            [["stepi"]] * 4)


def script(start):
    cmds = ["set sysroot /", "python exec(%r)" % BACK_OUT, "handle SIGUSR1 stop print", "handle SIGUSR2 stop print",
            "handle SIGWINCH nostop noprint pass", brk("start")] + start + ["delete", brk("done")]
    cmds += ["continue"] * 4 + ["delete"]
    points = []
    for m in motions():
        first = len(cmds)
        cmds += m + PROBE
        points.append(list(range(first, len(cmds))))
    return cmds, points


def run_side(mode, prog):
    target, start = recording_side(mode, prog)
    commands, points = script(start)
    result, left = run_commands(prog, target, commands)
    return result, points, left


def run_truth(prog):
    """Native, no recording: the live stop at MARK on_usr1 (its first run),
    where gdb 13's record full shows `sig` wrong (32767: it does not undo
    the signal frame's writes exactly); returns the probe's text."""
    cmds = ["set sysroot /", "handle SIGUSR1 nostop noprint pass", brk("on_usr1")] + native_start() + PROBE
    result, left = run_commands(prog, None, cmds)
    return normalise("".join(result.of(i) for i in range(len(cmds) - len(PROBE), len(cmds)))), left


def probe_text(result, indexes):
    return normalise("".join(result.of(i) for i in indexes[-len(PROBE):]))


def texts(result, points):
    out = []
    for indexes in points:
        out.append(normalise("".join("(gdb) %s\n%s" % (result.commands[i], result.of(i)) for i in indexes)))
    return out


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("past_signals", opt)
        ref, ref_points, ref_left = run_side("native", prog)
        sub, points, sub_left = run_side(args.server, prog)
        expected, got = texts(ref, ref_points), texts(sub, points)
        reported = sum(t.count("Program received signal") for t in expected)
        c.true("%s: record full reports the signals in the past" % opt,
               reported >= 6 and any(NO_HISTORY in t for t in expected), ref.transcript())
        truth, truth_left = run_truth(prog)
        at_handler = [n for n, m in enumerate(motions()) if m == ["reverse-continue"] and "Breakpoint 3, on_usr1" in
                      expected[n]]
        c.true("%s: the walk stops at on_usr1" % opt, len(at_handler) == 1, ref.transcript())
        for n, (e, g) in enumerate(zip(expected, got)):
            label = "%s: motion %d (%s)" % (opt, n, e.splitlines()[0])
            if n in at_handler or n - 1 in at_handler:
                # The probe there against the live stop; the stop line as record full's.
                c.equal(label + " probe against the live stop", truth, probe_text(sub, points[n]), sub.transcript())
                e, g = e.splitlines()[:3], g.splitlines()[:3]
                e = [re.sub(r"sig=\d+", "sig=N", line) for line in e]
                g = [re.sub(r"sig=\d+", "sig=N", line) for line in g]
            c.equal(label, e, g, sub.transcript())
        c.equal("%s: no process of the program is left" % opt, [], ref_left + sub_left + truth_left)


if __name__ == "__main__":
    run_test("test_past_signals", main)
