#!/usr/bin/env python3
"""Every pass over a breakpoint stops, while a signal the client passes on
stops the thread at the breakpoint's address before it has hit it
(tests/programs/signal_stepover.c and signal_after_syscall.c, O0 and O2).

At a breakpoint gdb steps over it itself: it removes it, single-steps,
and puts it back. When a signal arrives before that step runs the
instruction, the stop is the signal's, at the breakpoint's address; gdb
puts the breakpoint back, plants its step-resume breakpoint at the same
address and continues with the signal, expecting to hit it there and step
over again. btstub stepped off any breakpoint under the pc at a resume, so
the thread ran a whole pass and gdb took the next hit for its step-resume
breakpoint: a stop of the user's was lost (a review found passes 0, 4, 6,
7, 9... where gdbserver stops at 0, 1, 2, 3...). Now a breakpoint under
a thread whose last stop was a signal's is hit, not stepped off.

signal_stepover: a 3 ms SIGWINCH timer against a 2 ms sleep per pass:
twelve `continue`s from the start must stop at passes 0 to 11, as under
gdbserver. signal_after_syscall: each pass tgkills itself with SIGWINCH,
a breakpoint on the instruction after the `syscall`: the signal stops the
thread there as the call returns (the breakpoint not hit yet), and gdb
passes it on (QPassSignals); eight `continue`s must stop at passes 0 to
7, as under gdbserver (under --record every one was lost: the tracer steps
each system call, and its stop was taken for the breakpoint's).

Also under `--record` (the translating tracer, and `--trace-stops=int3`),
where the resume with the signal is the tracer's step, which must run the
int3 rather than the instruction under it. There the history must then
hold those passes and no other: as many `reverse-continue`s stop at the
breakpoint once fewer (the passes before the last) and then at the
history's start. (Values in signal_stepover's past are unavailable: with a
3 ms timer no copy of the program can re-run a stretch,
docs/past-state.md.)

    python3 test_signal_stepover.py [--server gdbserver] [-v]
"""

import re
import shlex

import harness
from harness import program, run_gdb, run_test, server_path


def passes_seen(result):
    return [int(v) for v in re.findall(r"^\$\d+ = (\d+)$", result.output, re.M)]


def reverse_hits(result):
    """Breakpoint stops after the REVERSE marker, and whether the last
    reverse-continue reached the history's start."""
    after = result.output.split("REVERSE", 1)[-1]
    return (len(re.findall(r"^Breakpoint 1, ", after, re.M)),
            "No more reverse-execution history" in after)


def main(args, c):
    line = harness.marker_line("signal_stepover.c", "counted")
    cases = [("signal_stepover", "break signal_stepover.c:%d" % line, 12),
             ("signal_after_syscall", "break *after_kill", 8)]
    modes = [[]]
    if args.server == "btstub":
        modes += [["--record"], ["--record", "--trace-stops=int3"]]
    for name, brk, continues in cases:
        for opt in ("O0", "O2"):
            prog = program(name, opt)
            for mode in modes:
                commands = [brk]
                for _ in range(continues):
                    commands += ["continue", "print passes"]
                if mode:
                    commands += ["echo REVERSE\\n"] + ["reverse-continue"] * continues
                target = "| " + shlex.join([server_path(args.server)] + mode + ["-", prog])
                result = run_gdb(commands, prog, target, timeout=90)
                what = "%s %s %s %s" % (name, opt, args.server, " ".join(mode) or "(not recording)")
                c.equal("%s: stops at every pass (passes 0 to %d)" % (what, continues - 1),
                        list(range(continues)), passes_seen(result), result.transcript()[-4000:])
                if mode:
                    c.equal("%s: going back stops at passes %d to 0, then at the history's start"
                            % (what, continues - 2),
                            (continues - 1, True), reverse_hits(result), result.transcript()[-4000:])


if __name__ == "__main__":
    run_test("test_signal_stepover", main)
