#!/usr/bin/env python3
"""A signal given with a resume reaches the program exactly when the
kernel would deliver it at that stop, recording or not.

signal_at_stop.c at -O0 and -O2, under btstub (not recording, `--record`,
and `monitor record start` at main) and gdbserver:

1. `queue-signal SIGUSR2` and `stepi` at a breakpoint: the step enters
   on_usr2. Stopped there (a ptrace_notify stop), `signal SIGUSR2`: the
   kernel ignores a signal injected at such a stop, so the program goes on
   to the next breakpoint with SIGUSR2 delivered once. Under the tracer a
   checkpoint taken at that stop resumed the thread first, the signal then
   reached it (blocked, so queued), and gdb saw a second SIGUSR2 after
   the handler.
2. `stepi` at a breakpoint, then `signal SIGUSR1`: delivered (the
   handler runs before the next breakpoint).
3. The counts the program prints, and gdb's stops, equal gdbserver's.

    python3 test_signal_at_stop.py [-v]
"""

import re
import shlex

from harness import marker_line, program, run_gdb, run_test, server_path

SOURCE = "signal_at_stop.c"


def normal(text):
    """A transcript without what differs between runs and servers."""
    text = re.sub(r"process \d+", "process N", text)
    text = re.sub(r"^Reading .* from remote target\.\.\.\n", "", text, flags=re.M)
    # At a handler's first instruction its argument is not stored yet: gdb
    # shows whatever the stack held there, which differs from run to run.
    text = re.sub(r"\(sig=-?\d+\)", "(sig=?)", text)
    return re.sub(r"0x[0-9a-f]+ in ", "", text)


def session(server, how, prog):
    into = marker_line(SOURCE, "into_handler")
    at_step = marker_line(SOURCE, "at_step")
    report = marker_line(SOURCE, "report")
    options = ["--record"] if how == "--record" else []
    target = "| " + shlex.join([server_path(server)] + options + ["-", prog])
    # Everyone stops at main first, so breakpoint numbers agree.
    start = ["break main", "continue"] + (["monitor record start"] if how == "monitor record start" else [])
    commands = start + [
        "break %s:%d" % (SOURCE, into), "break %s:%d" % (SOURCE, at_step), "break %s:%d" % (SOURCE, report),
        "continue",
        "queue-signal SIGUSR2", "stepi", "print usr2", "signal SIGUSR2", "print usr2",
        "stepi", "signal SIGUSR1", "print usr1", "print usr2",
        "continue", "continue"]
    return run_gdb(commands, prog, target, timeout=60), len(start)


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("signal_at_stop", opt)
        reference, skip = session("gdbserver", "plain", prog)
        # The last continue ends the program: recorded, its end comes in
        # more stops (the stop before exit_group, the held end).
        expected = [(cmd, normal(out or "")) for cmd, out in reference.outputs[skip:-1]]
        c.contains("%s: gdbserver's run delivers SIGUSR2 once and SIGUSR1 once" % opt, reference.output,
                   "usr1=1 usr2=1", reference.transcript())
        if args.server != "btstub":
            continue
        for how in ("plain", "--record", "monitor record start"):
            r, skip = session("btstub", how, prog)
            actual = [(cmd, normal(out or "")) for cmd, out in r.outputs[skip:-1]]
            c.equal("%s, %s: gdb's stops and values equal gdbserver's" % (opt, how), expected, actual,
                    r.transcript() + "\n--- gdbserver ---\n" + reference.transcript())
            c.contains("%s, %s: the program got each signal once" % (opt, how), r.output, "usr1=1 usr2=1",
                       r.transcript())


if __name__ == "__main__":
    run_test("test_signal_at_stop", main)
