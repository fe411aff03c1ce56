#!/usr/bin/env python3
"""gdb's `record btrace` while btstub replays its own recorded past is
refused, saying why, and the thread stays in the past (issue 27, item 3).

`btstub --record`, basic.c at -O0 (at -O2 compute's `i` has no home to
stop on): stop in compute()'s loop when i == 2, `reverse-next` twice (i
is 1), then `record btrace`: it must fail with btstub's message, and the
`next`s after it must show what the same `next`s show without the `record
btrace` (before, the thread silently went to the present and i jumped);
the second `next` reaches the end of the history ("No more
reverse-execution history"), where `record btrace` works and `info record`
shows gdb's recording.

    python3 test_btrace_in_replay.py [-v]
"""

import shlex

from harness import marker_line, program, run_gdb, run_test, server_path

MESSAGE = "branch tracing starts only in the present"


def script(with_btrace):
    line = marker_line("basic.c", "compute_loop")
    attempt = ["record btrace"] if with_btrace else []
    return (["break basic.c:%d if i == 2" % line, "continue", "delete", "reverse-next", "reverse-next",
             "print i"] + attempt + ["next", "next", "print i", "next", "print sum",
                                     "continue", "record btrace", "info record"])


def after_attempt(result, with_btrace):
    """The outputs of the commands after the attempt, by command."""
    start = 7 if with_btrace else 6
    return [(cmd, out) for cmd, out in result.outputs[start:start + 5]]


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub has --record (skipped for %s)" % args.server, True)
        return
    for opt in ("O0",):
        prog = program("basic", opt)
        target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
        plain = run_gdb(script(False), prog, target, timeout=120)
        tried = run_gdb(script(True), prog, target, timeout=120)
        ctx = tried.transcript()
        c.matches("%s: back in the loop, i is 1 (or optimized out)" % opt, plain.of_command("print i"),
                  r"^\$\d+ = 1$|optimized out", plain.transcript())
        c.contains("%s: record btrace in the past is refused with btstub's reason" % opt,
                   tried.of_command("record btrace"), MESSAGE, ctx)
        c.equal("%s: the nexts after it show what they show without it" % opt, after_attempt(plain, False),
                after_attempt(tried, True), ctx)
        c.contains("%s: the second next reaches the end of the history" % opt, tried.of_command("next", 1),
                   "No more reverse-execution history", ctx)
        c.not_contains("%s: there record btrace works" % opt, tried.of_command("record btrace", 1), MESSAGE, ctx)
        c.contains("%s: and gdb records" % opt, tried.of_command("info record"), "Active record target: record-btrace",
                   ctx)


if __name__ == "__main__":
    run_test("test_btrace_in_replay", main)
