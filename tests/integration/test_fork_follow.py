#!/usr/bin/env python3
"""Fork events to gdb (fork-events+, vfork-events+) with
tests/programs/forker.c, each gdb script run against gdbserver (the
reference) and the server under test; normalised transcripts must be equal:

1. Defaults (follow-fork-mode parent, detach-on-fork on) with `catch fork`,
   `catch vfork` and a breakpoint in shared_work(), which the fork child
   calls first: the fork stops at the catchpoint (`T05fork:`), gdb removes
   its breakpoints from the child (Hg on the child, z0) and detaches it
   (D;PID); the child runs free and exits 0 (a leftover int3 would kill it:
   "fork status 105"); the parent hits the breakpoint with x = 7; the vfork
   stops at its catchpoint (`T05vfork:`), gdb detaches the child, waits for
   `vforkdone`, puts its breakpoints back: a breakpoint on _exit, set at
   the vfork stop, is not seen by the vfork child (which calls _exit(5):
   "vfork status 5", not 133) but is hit by the parent afterwards; the
   program exits normally.
2. `set follow-fork-mode child`: gdb detaches the parent and follows the
   child, which hits the breakpoint in shared_work() with x = 5 and exits
   normally ("[Inferior 2 (process N) exited normally]").
3. `set detach-on-fork off` (with schedule-multiple on): gdbserver holds
   both processes; `info inferiors` lists two and the child hits the
   breakpoint. btstub debugs one process at a time and does not serve it:
   it must refuse with a clear message (the child's registers are not
   read as the parent's), and the program must not be left stopped.

    python3 test_fork_follow.py [--server gdbserver] [-v]
"""

import re

from harness import normalise, program, run_gdb_tcp, run_test, unified_diff

PORT = re.compile(r"remote 127\.0\.0\.1:\d+")

CATCH_COMMANDS = [
    "catch fork",
    "catch vfork",
    "break shared_work",
    "continue",
    "info inferiors",
    "continue",
    "print x",
    "continue",
    "break _exit",
    "continue",
    "continue",
]

CHILD_COMMANDS = [
    "set follow-fork-mode child",
    "break shared_work",
    "continue",
    "print x",
    "info inferiors",
    "continue",
]

BOTH_COMMANDS = [
    "set detach-on-fork off",
    "set schedule-multiple on",
    "break shared_work",
    "continue",
    "info inferiors",
]


def compare(c, label, ref, test, server_kind):
    ref_lines = [PORT.sub("remote PORT", line) for line in
                 normalise(ref.transcript().split("\n", 1)[1])]
    test_lines = [PORT.sub("remote PORT", line) for line in
                  normalise(test.transcript().split("\n", 1)[1])]
    c.true(label, ref_lines == test_lines,
           unified_diff(ref_lines, test_lines, "gdbserver", server_kind))


def both(kind, prog, commands):
    runs = {}
    for k in ("gdbserver", kind):
        runs[k] = run_gdb_tcp(k, prog, [], commands)
    return runs["gdbserver"], runs[kind]


def main(args, c):
    prog = program("forker")

    (ref, ref_server), (test, server) = both(args.server, prog, CATCH_COMMANDS)
    ctx = test.transcript() + "\n--- server stdout ---\n" + server.stdout
    c.contains("catch fork stops the parent", test.of(3),
               "Catchpoint 1 (forked process ", ctx)
    c.contains("the parent hits the breakpoint", test.of(5),
               "Breakpoint 3, shared_work (x=7)", ctx)
    c.value("x in the parent", test.of(6), "7")
    c.contains("catch vfork stops the parent", test.of(7),
               "Catchpoint 2 (vforked process ", ctx)
    c.contains("after vforkdone the breakpoints are back: _exit in the parent",
               test.of(9), "__GI__exit (status=status@entry=0)", ctx)
    c.contains("program exits normally", test.of(10), "exited normally", ctx)
    c.equal("children ran free of int3s; program output",
            "child 15\nfork status 0\nparent 21\nvfork status 5\n",
            server.stdout, ctx)
    compare(c, "catch fork/vfork: same gdb transcript as gdbserver", ref,
            test, args.server)

    (ref, ref_server), (test, server) = both(args.server, prog, CHILD_COMMANDS)
    ctx = test.transcript() + "\n--- server stdout ---\n" + server.stdout
    c.contains("gdb follows the child", test.of(2),
               "[Attaching after Thread ", ctx)
    c.contains("gdb detaches the parent", test.of(2),
               "[Detaching after fork from parent process ", ctx)
    c.contains("the child hits the breakpoint", test.of(2),
               "Breakpoint 1, shared_work (x=5)", ctx)
    c.value("x in the child", test.of(3), "5")
    c.contains("the child exits normally", test.of(5),
               "[Inferior 2 (process ", ctx)
    c.contains("child output", server.stdout, "child 15\n", ctx)
    compare(c, "follow-fork-mode child: same gdb transcript as gdbserver",
            ref, test, args.server)

    result, server = run_gdb_tcp(args.server, prog, [], BOTH_COMMANDS,
                                 timeout=30)
    ctx = result.transcript()
    if args.server == "gdbserver":
        c.contains("detach-on-fork off: the child hits the breakpoint",
                   result.of(3), "shared_work (x=5)", ctx)
        c.matches("detach-on-fork off: two inferiors", result.of(4),
                  r"^\*? +2 +process \d+ ", ctx)
    else:
        c.contains("detach-on-fork off: refused with a clear message",
                   result.of(3), "detach-on-fork off is not supported", ctx)
        c.true("detach-on-fork off: gdb was not left hanging",
               result.status is not None, ctx)


if __name__ == "__main__":
    run_test("test_fork_follow", main)
