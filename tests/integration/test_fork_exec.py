#!/usr/bin/env python3
"""fork, vfork and exec (tests/programs/forker.c, execer.c).

1. forker with a breakpoint in shared_work(), which the fork child calls
   first: gdb stays with the parent (gdb's default follow-fork-mode parent,
   detach-on-fork on); the child must run free of our int3s (it exits 0:
   "fork status 0"; a leftover int3 would make it 105, SIGTRAP), the
   parent hits the breakpoint with x = 7, the vfork child exits 5, and the
   program exits normally. Program output must equal gdbserver's.
2. execer execs itself: gdb announces the new program (exec-events), a
   breakpoint on after_exec() is hit in the new image with n = 2, and the
   program exits normally; transcript equal to gdbserver's.

3. btstub --record: `catch exec`, stepi (or not), on to after_exec() and
   reverse-continue to the exec: memory at that first point of the new
   image's history reads as it did live; forward again to the breakpoint.

Fork events (catchpoints, follow-fork-mode child, detach-on-fork off) are
tested by test_fork_follow.py.

    python3 test_fork_exec.py [--server gdbserver] [-v]
"""

from harness import check_same_transcript, program, run_gdb_tcp, run_test

FORK_COMMANDS = [
    "break shared_work",
    "continue",
    "print x",
    "delete",
    "continue",
]

EXEC_COMMANDS = [
    "break before_exec",
    "break after_exec",
    "continue",
    "continue",
    "print n",
    "continue",
]

EXEC_RECORD_COMMANDS = [
    "catch exec",
    "continue",
    "x/2gx $sp",
    "stepi",
    "break after_exec",
    "continue",
    "reverse-continue",
    "x/2gx $sp",
    "continue",
]


def main(args, c):
    prog = program("forker")
    runs = {}
    for kind in ("gdbserver", args.server):
        runs[kind] = run_gdb_tcp(kind, prog, [], FORK_COMMANDS)
    ref, ref_server = runs["gdbserver"]
    test, test_server = runs[args.server]
    ctx = test.transcript() + "\n--- server stdout ---\n" + test_server.stdout
    c.value("parent hits the breakpoint with x = 7", test.of(2), "7")
    c.contains("fork child exited 0 (no stray int3)", test_server.stdout,
               "fork status 0\n", ctx)
    c.contains("vfork child exited 5", test_server.stdout,
               "vfork status 5\n", ctx)
    c.contains("program exits normally", test.of(-1), "exited normally", ctx)
    c.equal("same program output as under gdbserver", ref_server.stdout,
            test_server.stdout, ctx)

    prog = program("execer")
    runs = {}
    for kind in ("gdbserver", args.server):
        runs[kind] = run_gdb_tcp(kind, prog, [], EXEC_COMMANDS)
    ref, ref_server = runs["gdbserver"]
    test, test_server = runs[args.server]
    ctx = test.transcript()
    c.contains("exec announced", test.of(3), "is executing new program", ctx)
    c.contains("breakpoint in the new image", test.of(3),
               "after_exec (n=2)", ctx)
    c.value("argument in the new image", test.of(4), "2")
    c.contains("exec'd program exits normally", test.of(-1),
               "exited normally", ctx)
    c.equal("exec program output", "first 2\nsecond 4\n", test_server.stdout,
            ctx)
    check_same_transcript(c, "exec: same gdb transcript as gdbserver", ref, test,
            args.server)
    if args.server == "btstub":
        recorded_exec(c, prog, EXEC_RECORD_COMMANDS, "stepi first")
        recorded_exec(c, prog, [cmd for cmd in EXEC_RECORD_COMMANDS if cmd != "stepi"], "continue first")


def recorded_exec(c, prog, commands, label):
    """--record, `catch exec`, stepi from the exec stop (the history's first
    point), on to after_exec() and back: memory there is the live stop's.
    btstub's calls injected at the exec event stop (the checkpoint's clone,
    the code cache's mmap) ran as read(): the kernel puts execve's result
    in rax after that stop. Without the checkpoint, memory at the first
    point was unknown ("Cannot access memory")."""
    test, server = run_gdb_tcp("btstub", prog, [], commands, options=("--once", "--record"))
    ctx = test.transcript()
    at = {cmd: i for i, cmd in reversed(list(enumerate(commands)))}  # each command's first index
    label = "--record, " + label
    c.contains("%s: the exec stops at the catchpoint" % label, test.of(1), "Catchpoint 1 (exec'd ", ctx)
    c.contains("%s: reverse-continue reaches the exec, the history's start" % label, test.of(at["reverse-continue"]),
               "No more reverse-execution history.", ctx)
    c.true("%s: memory at the exec point, live" % label, test.of(2).startswith("0x"), ctx)
    c.equal("%s: memory at the exec point in the past is the live stop's" % label, test.of(2),
            test.of(at["reverse-continue"] + 1), ctx)
    c.contains("%s: replay from the exec goes forward to the breakpoint" % label, test.of(len(commands) - 1),
               "Breakpoint 2, after_exec (n=2)", ctx)


if __name__ == "__main__":
    run_test("test_fork_exec", main)
