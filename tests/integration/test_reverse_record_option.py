#!/usr/bin/env python3
"""`btstub --record`, then plain gdb goes backwards (issue 5's first way in):

gdb connects to `btstub --record - reverse_walk_O0` with no `record` of its
own, stops at report(), and goes back: reverse-finish to the call in main, bt
names main there, reverse-step to the start of that line and then into
depth() (called just before), reverse-continue runs out of history, and two `continue`s go
forward through the history and then live to the normal exit. gdb must not
take btstub's recording for its own (`info record`: none).

Runs against btstub only (gdbserver has no --record).

    python3 test_reverse_record_option.py [-v]
"""

import shlex

from harness import marker_line, program, run_gdb, run_test, server_path

NO_HISTORY = "No more reverse-execution history."


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub has --record (skipped for %s)" % args.server, True)
        return
    prog = program("reverse_walk")
    src = "reverse_walk.c"
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    commands = ["break report", "continue", "info record", "reverse-finish",
                "bt", "reverse-step", "reverse-step", "reverse-continue",
                "continue", "continue", "continue", "continue"]
    r = run_gdb(commands, prog, target, timeout=120)
    ctx = r.transcript()
    c.matches("stops at report", r.of(1), r"^Breakpoint 1, report \(", ctx)
    c.contains("gdb leaves the recording to btstub", r.of(2),
               "No recording is currently active.", ctx)
    c.matches("reverse-finish goes back to the call in main", r.of(3),
              r"main \(\) at .*%s:%d" % (src, marker_line(src, "main_report")), ctx)
    c.matches("bt in the past names main", r.of(4), r"^#0 .*main \(\) at ", ctx)
    # reverse-finish stops at the call, mid-line: the first reverse-step
    # goes to the start of that line (as with record full), the second
    # into depth(), the call before it.
    c.matches("reverse-step: start of the calling line", r.of(5),
              r"^%d\t" % marker_line(src, "main_report"), ctx)
    c.matches("reverse-step: into depth() from its end", r.of(6),
              r"depth \(n=", ctx)
    c.contains("reverse-continue runs out of history", r.of(7), NO_HISTORY, ctx)
    # Past the breakpoint: the stop before exit_group, the held end, the exit.
    forward = r.of(8) + r.of(9) + r.of(10) + r.of(11)
    c.contains("forward: the end is held before the exit", r.of(10), "Program received signal SIGKILL", ctx)
    c.contains("forward: breakpoint at report reached again from the past",
               forward, "Breakpoint 1, report (", ctx)
    c.matches("forward: the program then exits normally", forward,
              r"\[Inferior 1 \(process \d+\) exited normally\]", ctx)


if __name__ == "__main__":
    run_test("test_reverse_record_option", main)
