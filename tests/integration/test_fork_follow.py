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
3. `set detach-on-fork off` with schedule-multiple on: both processes are
   debugged (inferiors 1 and 2); the child hits the breakpoint with x = 5;
   `bt` in the child; `inferior 1`: the parent's own stack and rip (in
   wait4, waiting for the child): registers and memory are the right
   process's; the child exits ("[Inferior 2 ... exited normally]"), the
   parent hits the breakpoint with x = 7 and, detach-on-fork on again (a
   kept vfork child's exit and its parent's vforkdone race, with gdbserver
   too), exits normally.
4. detach-on-fork off, schedule-multiple off: the fork resumes only the
   parent (stopped at waitpid); the child stays stopped until `inferior 2`
   and `continue` run it to the breakpoint and to its exit; then the parent
   goes on to the breakpoint with x = 7.
5. `kill inferiors 2` while the parent waits: the child dies of SIGKILL
   ("fork status 109"), the parent runs on.
6. `detach inferiors 2`: the child runs free without int3s although a
   breakpoint is in shared_work ("child 15", "fork status 0").
7. `kill inferiors 1` while the child is still held (gdb never asked about
   it): the child stays debugged; `inferior 2` and `continue` run it to its
   end.
8. `kill` with two processes (one per inferior, as gdb sends vKill;PID),
   and a dropped connection (gdb killed) with two processes: no process of
   the program is left (checked in /proc).
9. tests/programs/fork_threads.c, detach-on-fork off and schedule-multiple
   on: the parent has a second thread, so btstub waits for any of its
   tracees and also reaps the child's statuses, which must reach the child:
   each process hits its own breakpoint three times (the interleaving is
   the scheduler's), both run to their end. Not compared with gdbserver,
   which loses the parent's registers after the child's exit here.
10. `set follow-fork-mode child` at the vfork, with a breakpoint on _exit
   (set in the parent, whose memory the vfork child runs in): the child's
   hit is a breakpoint hit (status = 5), not a SIGTRAP past the int3; the
   child exits with 5 and the parent runs to its end.
11. btstub only, `--record`: `set follow-fork-mode child`; the fork child
   (which has none of the translating tracer's code cache) hits the
   breakpoint with x = 5 (it died of SIGSEGV, sent into the parent's
   cache); `reverse-finish` walks its own history back to the call in
   main; replay runs forward to the breakpoint (the history's end), then
   the child runs to its end.

    python3 test_fork_follow.py [--server gdbserver] [-v]
"""

import re

from harness import (Server, check_same_transcript, marker_line, pid_alive, program, run_gdb,
                     run_gdb_tcp, run_test, transcript_lines, wait_until)

PORT = re.compile(r"remote 127\.0\.0\.1:\d+")
# waitpid(pid=N) in the parent's frames names the child.
PID_ARG = re.compile(r"\bpid=\d+")

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
    "bt",
    "inferior 1",
    "bt",
    "info registers rip",
    "continue",
    "inferior 1",
    "continue",
    "print x",
    "set detach-on-fork on",
    "continue",
]

ONE_AT_A_TIME_COMMANDS = [
    "set detach-on-fork off",
    "break shared_work",
    "break waitpid",
    "continue",
    "info inferiors",
    "inferior 2",
    "continue",
    "print x",
    "continue",
    "inferior 1",
    "delete 2",
    "continue",
    "print x",
]

VFORK_CHILD_COMMANDS = [
    "break shared_work",
    "continue",
    "set follow-fork-mode child",
    "break _exit",
    "continue",
    "print status",
    "continue",
]

RECORD_CHILD_COMMANDS = [
    "set follow-fork-mode child",
    "break shared_work",
    "continue",
    "print x",
    "reverse-finish",
    "continue",
    "continue",
    "continue",
    "continue",
]

KILL_CHILD_COMMANDS = [
    "set detach-on-fork off",
    "break waitpid",
    "continue",
    "kill inferiors 2",
    "info inferiors",
    "delete",
    "continue",
]

DETACH_CHILD_COMMANDS = [
    "set detach-on-fork off",
    "break shared_work",
    "break waitpid",
    "continue",
    "detach inferiors 2",
    "info inferiors",
    "delete",
    "continue",
]

KILL_PARENT_COMMANDS = [
    "set detach-on-fork off",
    "break waitpid",
    "continue",
    "kill inferiors 1",
    "info inferiors",
    "inferior 2",
    "continue",
]

KILL_BOTH_COMMANDS = [
    "set detach-on-fork off",
    "break waitpid",
    "continue",
    "info inferiors",
    "kill",
    "inferior 2",
    "kill",
    "info inferiors",
]

DROP_COMMANDS = [
    "set detach-on-fork off",
    "set schedule-multiple on",
    "break shared_work",
    "continue",
    "info inferiors",
    "shell kill -9 $PPID",
]

THREADS_COMMANDS = [
    "set detach-on-fork off",
    "set schedule-multiple on",
    "break child_work",
    "break parent_work",
] + ["continue"] * 6 + [
    "delete",
    "continue",
    "inferior 1",
    "continue",
]
HIT = re.compile(r"hit Breakpoint \d+\.\d+, (child_work|parent_work) \(x=(\d)\)")

INFERIOR_PID = re.compile(r"^\*? +\d+ +process (\d+) ", re.M)


# gdbserver 13.1 sometimes answers a register read of the parent with
# "unavailable" right after the other inferior's exit under schedule-multiple
# (seen once on a loaded 2-core VM: "#0  <unavailable> in ?? ()", then "PC
# register is not available" at every command): its transcript is then no
# oracle for that run.
GDBSERVER_LOST_REGISTERS = ("PC register is not available", "<unavailable> in ?? ()")


def compare(c, label, ref, test, server_kind):
    lost = [s for s in GDBSERVER_LOST_REGISTERS if s in ref.output and s not in test.output]
    if lost:
        c.skip(label, "the reference broke: gdbserver lost the registers (%r)" % lost[0])
        return
    check_same_transcript(c, label, ref, test, server_kind, lines=comparable)


def comparable(result):
    return [PID_ARG.sub("pid=PID", PORT.sub("remote PORT", line)) for line in transcript_lines(result)]


def scenario(kind, prog, commands):
    """Runs the script against gdbserver and `kind`: (gdbserver's result,
    kind's result, kind's server, context for failure messages)."""
    ref, _ = run_gdb_tcp("gdbserver", prog, [], commands)
    test, server = run_gdb_tcp(kind, prog, [], commands)
    return ref, test, server, \
        test.transcript() + "\n--- server stdout ---\n" + server.stdout


def main(args, c):
    prog = program("forker")

    ref, test, server, ctx = scenario(args.server, prog, CATCH_COMMANDS)
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

    ref, test, server, ctx = scenario(args.server, prog, CHILD_COMMANDS)
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

    ref, test, server, ctx = scenario(args.server, prog, VFORK_CHILD_COMMANDS)
    c.contains("the vfork child, followed, hits the parent's breakpoint as one", test.of(4),
               "hit Breakpoint 2.1, __GI__exit (status=5)", ctx)
    c.value("status in the vfork child", test.of(5), "5")
    c.contains("the vfork child exits with its own code", test.of(6), "exited with code 05]", ctx)
    c.equal("both processes ran to their end; program output",
            "child 15\nfork status 0\nparent 21\nvfork status 5\n", server.stdout, ctx)
    compare(c, "vfork child followed: same gdb transcript as gdbserver", ref, test, args.server)

    if args.server == "btstub":
        recorded_child(c, prog)

    ref, test, server, ctx = scenario(args.server, prog, BOTH_COMMANDS)
    c.contains("detach-on-fork off: the child hits the breakpoint",
               test.of(3), "shared_work (x=5)", ctx)
    c.true("detach-on-fork off: two inferiors, two processes",
           len(INFERIOR_PID.findall(test.of(4))) == 2, ctx)
    c.contains("bt in the child", test.of(5), "#0  shared_work (x=5)", ctx)
    c.contains("bt in the parent: waiting for the child", test.of(7),
               "in main () at forker.c:%d" %
               marker_line("forker.c", "parent_wait"), ctx)
    c.contains("the parent's rip", test.of(8), "<__GI___wait4+", ctx)
    c.contains("the child exits", test.of(9), "[Inferior 2 (process ", ctx)
    c.value("then the parent hits the breakpoint", test.of(12), "7")
    c.contains("the parent exits", test.of(14), "[Inferior 1 (process ", ctx)
    c.equal("both processes ran to their end; program output",
            "child 15\nfork status 0\nparent 21\nvfork status 5\n",
            server.stdout, ctx)
    compare(c, "detach-on-fork off: same gdb transcript as gdbserver", ref,
            test, args.server)

    ref, test, server, ctx = scenario(args.server, prog, ONE_AT_A_TIME_COMMANDS)
    c.contains("schedule-multiple off: the parent alone runs to waitpid",
               test.of(3), "__GI___waitpid (pid=", ctx)
    c.contains("the held child is at its fork", test.of(5), "arch_fork", ctx)
    c.value("the child, resumed alone, hits the breakpoint", test.of(7), "5")
    c.contains("the child exits", test.of(8), "[Inferior 2 (process ", ctx)
    c.value("the parent goes on to the breakpoint", test.of(12), "7")
    compare(c, "schedule-multiple off: same gdb transcript as gdbserver", ref,
            test, args.server)

    ref, test, server, ctx = scenario(args.server, prog, KILL_CHILD_COMMANDS)
    c.contains("kill inferiors 2: the child died of SIGKILL", server.stdout,
               "fork status 109\n", ctx)
    compare(c, "kill inferiors 2: same gdb transcript as gdbserver", ref,
            test, args.server)

    ref, test, server, ctx = scenario(args.server, prog, DETACH_CHILD_COMMANDS)
    c.contains("detach inferiors 2: the child ran free without int3s",
               server.stdout, "child 15\nfork status 0\n", ctx)
    compare(c, "detach inferiors 2: same gdb transcript as gdbserver", ref,
            test, args.server)

    ref, test, server, ctx = scenario(args.server, prog, KILL_PARENT_COMMANDS)
    c.contains("kill inferiors 1: the held child is still inferior 2",
               test.of(4), "process ", ctx)
    c.contains("kill inferiors 1: the child then runs to its end",
               test.of(6), "[Inferior 2 (process ", ctx)
    c.contains("kill inferiors 1: the child ran free of int3s",
               server.stdout, "child 15\n", ctx)
    compare(c, "kill inferiors 1: same gdb transcript as gdbserver", ref,
            test, args.server)

    ref, test, server, ctx = scenario(args.server, prog, KILL_BOTH_COMMANDS)
    pids = [int(p) for p in INFERIOR_PID.findall(test.of(3))]
    c.true("kill: two processes before", len(pids) == 2, ctx)
    c.contains("kill: the parent is killed", test.of(4),
               "[Inferior 1 (process %d) killed]" % (pids[0] if pids else 0), ctx)
    c.contains("kill: then the child", test.of(6),
               "[Inferior 2 (process %d) killed]" % (pids[1] if pids[1:] else 0), ctx)
    c.true("kill: no process of the program is left",
           not any(pid_alive(pid) for pid in pids), ctx)
    compare(c, "kill: same gdb transcript as gdbserver", ref, test,
            args.server)

    dropped(c, args.server, prog)
    threaded_parent(c, args.server)


def recorded_child(c, prog):
    """--record (the default, translating tracer) and follow-fork-mode
    child: the child has no code cache (never forked), so the recording
    starts again in it, from the fork on."""
    test, server = run_gdb_tcp("btstub", prog, [], RECORD_CHILD_COMMANDS, options=("--once", "--record"))
    ctx = test.transcript() + "\n--- server stdout ---\n" + server.stdout
    c.contains("--record, follow the fork child: it hits the breakpoint", test.of(2),
               "Breakpoint 1, shared_work (x=5)", ctx)
    c.value("--record, follow the fork child: x", test.of(3), "5")
    c.contains("--record, follow the fork child: reverse-finish walks its own history back to the call",
               test.of(4), "in main () at forker.c:%d" % marker_line("forker.c", "child_call"), ctx)
    c.contains("--record, follow the fork child: replay runs forward to the breakpoint again", test.of(5),
               "Breakpoint 1, shared_work (x=5)", ctx)
    c.contains("--record, follow the fork child: the child runs to its end", test.of(8),
               "[Inferior 2 (process ", ctx)
    c.true("--record, follow the fork child: no fault", "SIGSEGV" not in test.transcript(), ctx)
    c.contains("--record, follow the fork child: child output", server.stdout, "child 15\n", ctx)


def threaded_parent(c, kind):
    result, server = run_gdb_tcp(kind, program("fork_threads"), [],
                                 THREADS_COMMANDS, timeout=60)
    ctx = result.transcript() + "\n--- server stdout ---\n" + server.stdout
    hits = sorted(HIT.findall(result.output))
    c.equal("threaded parent: each process hits its own breakpoint 3 times",
            [("child_work", "0"), ("child_work", "1"), ("child_work", "2"),
             ("parent_work", "0"), ("parent_work", "1"),
             ("parent_work", "2")], hits, ctx)
    c.contains("threaded parent: the child ran to its end", server.stdout,
               "child 9\n", ctx)
    if kind == "gdbserver":
        print("NOTE threaded parent: gdbserver loses the parent's registers "
              "after the child's exit; its end is not checked", flush=True)
        return
    c.contains("threaded parent: the parent ran to its end", server.stdout,
               "parent 6, child status 0\n", ctx)
    c.true("threaded parent: both exited normally",
           result.output.count("exited normally]") == 2, ctx)


def dropped(c, kind, prog):
    """gdb dies with two processes debugged: the server's connection drops,
    and (with --once) the server ends without leaving either behind."""
    server = Server(kind, [prog], options=("--once",))
    try:
        result = run_gdb(DROP_COMMANDS, prog, server.address, timeout=30)
        status = server.wait_exit(10.0)
        pids = [int(p) for p in INFERIOR_PID.findall(result.of(4))]
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.true("dropped connection: two processes were debugged",
               len(pids) == 2, ctx)
        c.true("dropped connection: the server ended", status is not None, ctx)
        c.true("dropped connection: no process of the program is left",
               wait_until(lambda: not any(pid_alive(p) for p in pids), 5.0),
               ctx + "\nalive: %s" % [p for p in pids if pid_alive(p)])
    finally:
        server.stop()


if __name__ == "__main__":
    run_test("test_fork_follow", main)
