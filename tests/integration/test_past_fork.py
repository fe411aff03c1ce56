#!/usr/bin/env python3
"""Values right after a fork and a vfork, in the recorded past, equal the
live ones.

past_fork.c (O0, O2) forks, computes and calls after_fork(sum, forked),
then vforks and calls after_vfork(sum, forked); no system call lies
between each call and the function. Under `btstub --record
--checkpoint-every=1000000000` (no periodic checkpoint: only those after
system calls) gdb stops live at both functions (`info args`), runs to the
final printf, and reverse-continues to each function again, where `info
args` must equal the live stop and `monitor replay status` must say the
values come from a copy of the program.

The fork and the vfork stop the program in their ptrace event stops,
which gdb hears of before the call ends: the checkpoint due after the call
was lost there, so the newest one before the point stood before the call,
and its copy met the call ("The copy met a system call the recording did
not have there"): every value was unavailable. With the translating
tracer and with int3 trace stops.

    python3 test_past_fork.py [-v]
"""

import re

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break after_fork", "break after_vfork", "break printf",      # 0-2
    "continue", "info args",                                      # 3-4: live at after_fork
    "continue", "info args",                                      # 5-6: live at after_vfork
    "continue",                                                   # 7: printf
    "reverse-continue", "info args", "monitor replay status",     # 8-10: back at after_vfork
    "reverse-continue", "info args", "monitor replay status",     # 11-13: back at after_fork
    "delete", "continue", "continue",                             # 14-16: the live end, the program's end
]

TRACERS = (("translate", "--trace-stops=translate"), ("int3", "--trace-stops=int3"))


def args_of(text):
    """The `info args` lines: name = value."""
    return [line for line in text.splitlines() if re.match(r"^\w+ = ", line)]


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    for opt in ("O0", "O2"):
        for name, tracer in TRACERS:
            tag = "%s %s" % (opt, name)
            options = ("--once", "--record", "--checkpoint-every=1000000000", tracer)
            result, server = run_gdb_tcp("btstub", program("past_fork", opt), [], COMMANDS,
                                         options=options, timeout=120)
            ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
            c.matches("%s: live at after_fork" % tag, result.of(3), r"Breakpoint 1, after_fork \(")
            c.matches("%s: live at after_vfork" % tag, result.of(5), r"Breakpoint 2, after_vfork \(")
            c.matches("%s: back at after_vfork" % tag, result.of(8), r"Breakpoint 2, after_vfork \(")
            c.matches("%s: back at after_fork" % tag, result.of(11), r"Breakpoint 1, after_fork \(")
            for what, live, past, status in (("after_vfork", 6, 9, 10), ("after_fork", 4, 12, 13)):
                c.equal("%s: live args at %s are sum and forked = 1" % (tag, what),
                        ["sum", "forked = 1"], [a.split(" = ")[0] if a.startswith("sum") else a
                                                for a in args_of(result.of(live))], ctx)
                c.equal("%s: args back at %s equal the live ones" % (tag, what),
                        args_of(result.of(live)), args_of(result.of(past)), ctx)
                c.contains("%s: the values back at %s come from a copy" % (tag, what),
                           result.of(status), "from a copy of the program", ctx)
            c.contains("%s: the program ends as natively" % tag, server.stdout,
                       "fork 3, vfork 4, sink ", ctx)


if __name__ == "__main__":
    run_test("test_past_fork", main)
