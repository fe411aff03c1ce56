#!/usr/bin/env python3
"""Breakpoints gdb writes into memory itself are reported as breakpoints,
as gdbserver reports them (issue 27, item 1).

With `set remote Z-packet off` or `set remote software-breakpoint-packet
off` gdb inserts its breakpoints by writing an int3 with `X`/`M`. btstub
advertised `swbreak+` but reported their traps as a plain SIGTRAP with the
pc one past the int3, so gdb said "Program received signal SIGTRAP" (in
ld.so, at its shared-library breakpoint) where gdbserver's gdb says
"Breakpoint 1, factorial (n=5)". An int3 that was in the program's code
before (own_int3.c) is still the program's: a SIGTRAP, as under gdbserver.

basic.c at -O0 (factorial's recursion hits its breakpoint again and again)
and own_int3.c at -O0 and -O2 (its own int3, then a breakpoint after it),
each way of turning Z0 off: the normalised transcript must equal
gdbserver's.

    python3 test_memory_breakpoints.py [--server gdbserver] [-v]
"""

import re
import shlex

from harness import normalise, program, run_gdb, run_test, server_path, unified_diff

SETTINGS = ["set remote Z-packet off", "set remote software-breakpoint-packet off"]


def session(kind, prog, args, commands):
    target = "| " + shlex.join([server_path(kind), "-", prog] + args)
    result = run_gdb(commands, prog, target, timeout=60)
    lines = []
    for command, output in result.outputs:
        lines += ["(gdb) " + command] + normalise(output or "<not reached>")
    return lines, result


def compare(c, label, kind, prog, args, commands, must_contain):
    ref, _ = session("gdbserver", prog, args, commands)
    got, result = session(kind, prog, args, commands)
    c.true("%s: the same transcript as gdbserver's" % label, ref == got,
           unified_diff(ref, got, "gdbserver", kind))
    for needle in must_contain:
        c.contains("%s: %s" % (label, needle), "\n".join(got), needle, result.transcript())


def main(args, c):
    for setting in SETTINGS:
        # At -O2 factorial(5) is computed at compile time: -O0 only.
        basic = [setting, "break factorial", "continue", "continue", "continue", "bt 2", "info registers rip",
                 "delete", "continue"]
        compare(c, "O0, basic, %s" % setting, args.server, program("basic", "O0"), ["alpha", "beta"],
                basic, ["Breakpoint 1, factorial (n=5)", "Breakpoint 1, factorial (n=3)", "exited with code 07"])
        for opt in ("O0", "O2"):
            own = [setting, "break after_trap", "continue", "info registers rip", "continue", "continue",
                   "continue", "continue"]
            compare(c, "%s, own int3, %s" % (opt, setting), args.server, program("own_int3", opt), [], own,
                    ["Program received signal SIGTRAP", "Breakpoint 1, after_trap (v=", "exited normally"])

    if args.server == "btstub":
        check_recording(c)
        check_own_int3_recorded(c)


def check_recording(c):
    """Under recording the tracer would take the client's int3 for code
    (the program faulted in ld.so): the write is refused, gdb says it
    cannot insert the breakpoint, and the program runs on unharmed."""
    prog = program("basic", "O0")
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog, "alpha", "beta"])
    r = run_gdb(["set remote Z-packet off", "break factorial", "continue", "delete", "set remote Z-packet on",
                 "break add_one", "continue", "delete", "continue", "continue", "continue"], prog, target, timeout=60)
    c.contains("--record: a breakpoint written into memory is refused", r.of_command("continue"),
               "Cannot insert breakpoint 1", r.transcript())
    c.contains("--record: with Z packets on again the next breakpoint is hit", r.of_command("continue", 1),
               "Breakpoint 2, add_one", r.transcript())
    c.not_contains("--record: the program never faults", r.output, "SIGSEGV", r.transcript())
    c.contains("--record: and ends with its exit code", r.output, "exited with code 07", r.transcript())


def check_own_int3_recorded(c):
    """The program's own int3 under recording is its SIGTRAP, as under
    gdbserver (above): the tracers step such code, and the step's trap was
    taken for a step done, so the signal vanished (gdb never stopped, a
    SIGTRAP handler of the program's never ran)."""
    for mode in ("translate", "int3"):
        for opt in ("O0", "O2"):
            prog = program("own_int3", opt)
            target = "| " + shlex.join([server_path("btstub"), "--record", "--trace-stops=" + mode, "-", prog])
            r = run_gdb(["continue", "bt 1", "continue", "bt 1", "continue"], prog, target, timeout=60)
            label = "--record --trace-stops=%s, %s" % (mode, opt)
            for k, v in ((0, 4), (1, 15)):
                c.contains("%s: the program's int3 stops it with SIGTRAP (%d)" % (label, k + 1), r.of_command("continue", k),
                           "Program received signal SIGTRAP", r.transcript())
                c.true("%s: in trap_here (v=%d)" % (label, v),
                       re.search(r"trap_here \(v=(v@entry=)?%d\)" % v, r.of_command("bt 1", k) or "") is not None,
                       r.transcript())
            c.not_contains("%s: no third SIGTRAP" % label, r.of_command("continue", 2), "SIGTRAP", r.transcript())


if __name__ == "__main__":
    run_test("test_memory_breakpoints", main)
