#!/usr/bin/env python3
"""Reverse execution of the program while gdb keeps its fork child
(`set detach-on-fork off`) answers as with the child let go.

forker.c at -O0 under `btstub --record`: gdb stops live at MARK
parent_wait (after the fork; the child is kept, stopped), then
`reverse-step`, `tbreak main` and `reverse-continue` to the start of main,
reading `$pc` at each point before and after `maint flush register-cache`
(the stop reply's registers against the `g` packet's), `info line *$pc`
and `monitor replay status`; with the child kept, `monitor record status`
with the child selected says it is not recorded, and with the program
selected shows its thread's branches. The same session with the child let go
(detach-on-fork on) is the reference: each point's frame line and pc must
be the same.

With the child kept, gdb selects it at times (Hg) and names the program's
threads with Hc pPID.0 before bs/bc. The stop replies' registers came from
the selected process, the child, live: gdb showed the program at the
breakpoint it had left (stale pc, rsp, rbp) while btstub stood at main;
and `bs` moved the thread that last stopped or the selected one, the
child, which has no history: `reverse-step` failed ("Reverse execution
is not available for process CHILD").

    python3 test_fork_child_replay.py [-v]
"""

import re

from harness import marker_line, program, run_gdb_tcp, run_test

SOURCE = "forker.c"


def commands(keep_child):
    return [
        "set detach-on-fork %s" % ("off" if keep_child else "on"),
        "break %s:%d" % (SOURCE, marker_line(SOURCE, "parent_wait")),
        "continue",                                                        # 2: live at parent_wait
        "reverse-step",                                                    # 3
        "p/x $pc", "maint flush register-cache", "p/x $pc", "info line *$pc",   # 4-7
        "tbreak main", "reverse-continue",                                 # 8-9
        "p/x $pc", "maint flush register-cache", "p/x $pc", "info line *$pc",   # 10-13
        "monitor replay status",                                           # 14
    ] + ([
        # The kept child selected: the status says it is not recorded (it
        # said "recording from its next resume", which never comes) and
        # still shows the program's thread, as with inferior 1 selected in
        # gdb (which need not select it at the server).
        "inferior 2", "p/x $pc", "monitor record status",                  # 15-17
        "inferior 1", "p/x $pc", "monitor record status",                  # 18-20
    ] if keep_child else [])


def pc_of(text):
    m = re.search(r"^\$\d+ = (0x[0-9a-f]+)$", text, re.M)
    return m.group(1) if m else None


def line_of(text):
    m = re.search(r"^Line (\d+) of \"[^\"]*forker\.c\"", text, re.M)
    return m.group(1) if m else None


def points(result):
    """{point: (pc from the stop, pc after the flush, line)}"""
    return {name: (pc_of(result.of(a)), pc_of(result.of(b)), line_of(result.of(c)))
            for name, (a, b, c) in (("after reverse-step", (4, 6, 7)), ("at main", (10, 12, 13)))}


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    prog = program("forker", "O0")
    runs = {}
    for keep in (False, True):
        result, server = run_gdb_tcp("btstub", prog, [], commands(keep), options=("--once", "--record"),
                                     timeout=120)
        runs[keep] = (result, result.transcript() + "\n--- server stderr ---\n" + server.stderr)
    ref, ref_ctx = runs[False]
    sub, ctx = runs[True]
    for keep, (result, context) in runs.items():
        tag = "child kept" if keep else "child let go"
        c.matches("%s: live at parent_wait" % tag, result.of(2), r"Breakpoint 1(\.1)?, main \(\) at forker\.c:%d"
                  % marker_line(SOURCE, "parent_wait"), context)
        c.not_contains("%s: reverse-step is not refused" % tag, result.of(3), "Remote failure", context)
        c.matches("%s: reverse-continue stops at tbreak main" % tag, result.of(9),
                  r"Temporary breakpoint \d+(\.1)?, main \(\) at forker\.c:", context)
        for name, (stop_pc, read_pc, line) in points(result).items():
            c.true("%s: %s: a pc and a line" % (tag, name), stop_pc is not None and line is not None, context)
            c.equal("%s: %s: the stop reply's pc is the registers' pc" % (tag, name), read_pc, stop_pc, context)
        c.contains("%s: btstub replays where gdb shows" % tag, result.of(14),
                   "(pc %s)" % pc_of(result.of(12)), context)
    c.matches("child kept, child selected: the record status says it is not recorded", sub.of(17),
              r"process \d+: not recorded \(btstub records only the program", ctx)
    c.not_contains("child kept, child selected: no thread listed as recording later", sub.of(17),
                   "recording from its next resume", ctx)
    for i, tag in ((17, "child selected"), (20, "program selected")):
        c.matches("child kept, %s: the record status has the program's thread's branches" % tag, sub.of(i),
                  r"thread \d+: \d+ of \d+ branches", ctx)
    for name, point in points(ref).items():
        c.equal("child kept: %s: the point equals the one with the child let go" % name, point,
                points(sub)[name], ctx)


if __name__ == "__main__":
    run_test("test_fork_child_replay", main)
