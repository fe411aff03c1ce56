#!/usr/bin/env python3
"""All-stop when threads end in ways the stop logic finds hard, and detach
from a program killed while stopped (tests/programs/thread_ends.c). Each
case runs under gdbserver and the server tested; gdb's transcript and the
program's own output must be the same.

1. exec: a non-leader thread execs while main waits in pthread_join; gdb
   announces the new program and continues to a breakpoint in the new
   image, then the program exits normally.
2. leader: main leaves with pthread_exit while its thread runs; the thread
   stops at a breakpoint, `info threads` lists it alone (the leader is
   gone), and the program exits normally.
3. alone: with `set scheduler-locking on` gdb resumes only a thread that
   then exits; gdbserver answers `N` (no thread resumed) and gdb prints
   "No unwaited-for children left."; main then runs on to a normal exit.
   When the thread instead ends the process (exit(3), so exit_group),
   btstub reports the exit ("exited with code 03"); gdbserver answers `N`
   there too, then fails to remove its breakpoints from the dead process,
   and the test states that difference.
4. leader exec (gdb.threads/step-over-exec.exp, execr_thread=leader): main
   starts a thread and execs itself. With only a conditional breakpoint
   (`if 0`, evaluated by gdb: gdbserver 13.1 asserts otherwise) on the way
   gdb shows no stop before the exec, never numbers the second thread, and
   prints "Breakpoint 1, after_exec" without "Thread ... hit"; with a
   shown stop first it prints "Thread 1 ... hit Breakpoint 1". Both
   transcripts equal gdbserver's: gdb's own rule, not the server's.
5. detach: SIGKILL from outside while the program is stopped at a
   breakpoint, then `detach`: "[Inferior 1 (process N) detached]", not
   "Can't detach process.", and a --once server ends.

    python3 test_thread_ends.py [--server gdbserver] [-v]
"""

from harness import normalise, program, run_gdb_tcp, run_test, unified_diff

EXEC_COMMANDS = [
    "break after_exec",
    "continue",
    "continue",
]

LEADER_COMMANDS = [
    "break leader_gone",
    "continue",
    "info threads",
    "continue",
]

ALONE_COMMANDS = [
    "break in_thread",
    "continue",
    "set scheduler-locking on",
    "continue",
    "thread 1",
    "set scheduler-locking off",
    "continue",
]

GROUP_COMMANDS = ALONE_COMMANDS[:4]

# Kills the program from outside and waits (bounded) until it is a zombie:
# dead, not yet reaped by its tracer.
KILL_AND_WAIT = (
    "python import os, signal, time; pid = gdb.selected_inferior().pid; "
    "os.kill(pid, signal.SIGKILL); "
    "state = lambda: open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[0]; "
    "deadline = time.time() + 20; "
    "[time.sleep(0.01) for _ in iter(lambda: state() not in 'ZX' and time.time() < deadline, False)]; "
    "print('killed state', state())")

LEADER_EXEC_UNSEEN = [
    "set breakpoint condition-evaluation host",
    "break after_exec",
    "break before_exec if 0",
    "continue",
    "info threads",
    "continue",
]

LEADER_EXEC_SEEN = [
    "break after_exec",
    "break before_exec",
    "continue",
    "continue",
    "info threads",
    "continue",
]

DETACH_COMMANDS = [
    "break at_rest",
    "continue",
    KILL_AND_WAIT,
    "detach",
    "info inferiors",
]


def lines_of(result, index):
    return normalise(result.of(index))


def transcript_lines(result):
    return normalise(result.transcript().split("\n", 1)[1])


def both(args, mode, commands):
    runs = {}
    for kind in ("gdbserver", args.server):
        runs[kind] = run_gdb_tcp(kind, program("thread_ends"), [mode], commands)
    return runs["gdbserver"], runs[args.server]


def same(c, label, ref_lines, test_lines, kind, ctx=""):
    c.true(label, ref_lines == test_lines,
           unified_diff(ref_lines, test_lines, "gdbserver", kind) + ctx)


def check_exec(args, c):
    (ref, ref_server), (test, test_server) = both(args, "exec", EXEC_COMMANDS)
    ctx = "\n" + test.transcript()
    c.contains("exec: new program announced", test.of(1),
               "is executing new program", ctx)
    c.contains("exec: breakpoint in the new image", test.of(1),
               "after_exec (n=2)", ctx)
    c.contains("exec: exits normally", test.of(2), "exited normally", ctx)
    same(c, "exec: same transcript as gdbserver", transcript_lines(ref),
         transcript_lines(test), args.server)
    c.equal("exec: same program output", ref_server.stdout, test_server.stdout,
            ctx)


def check_leader(args, c):
    (ref, ref_server), (test, test_server) = both(args, "leader",
                                                  LEADER_COMMANDS)
    ctx = "\n" + test.transcript()
    c.contains("leader: thread stops at its breakpoint", test.of(1),
               "leader_gone (n=1)", ctx)
    c.contains("leader: exits normally", test.of(3), "exited normally", ctx)
    same(c, "leader: same transcript as gdbserver", transcript_lines(ref),
         transcript_lines(test), args.server)
    c.equal("leader: same program output", ref_server.stdout,
            test_server.stdout, ctx)


def check_alone(args, c):
    (ref, ref_server), (test, test_server) = both(args, "alone",
                                                  ALONE_COMMANDS)
    ctx = "\n" + test.transcript()
    c.contains("alone: no resumed thread left", test.of(3),
               "No unwaited-for children left.", ctx)
    # Where main stood when the thread hit its breakpoint is timing (`thread
    # 1` shows it), so the other commands are compared one by one.
    for index in (1, 3, 6):
        same(c, "alone: `%s` (#%d) as under gdbserver" % (ALONE_COMMANDS[index], index),
             lines_of(ref, index), lines_of(test, index), args.server, ctx)
    c.contains("alone: exits normally", test.of(6), "exited normally", ctx)
    c.equal("alone: same program output", ref_server.stdout,
            test_server.stdout, ctx)


def check_group_exit(args, c):
    result, server = run_gdb_tcp(args.server, program("thread_ends"),
                                 ["group"], GROUP_COMMANDS)
    ctx = "\n" + result.transcript()
    if args.server == "gdbserver":
        c.contains("group exit: gdbserver answers N", result.of(3),
                   "No unwaited-for children left.", ctx)
    else:
        c.contains("group exit: the process's exit is reported", result.of(3),
                   "exited with code 03]", ctx)
    c.equal("group exit: program output", "in thread 4\n", server.stdout, ctx)


def check_leader_exec(args, c):
    (ref, ref_server), (test, test_server) = both(args, "leader-exec",
                                                  LEADER_EXEC_UNSEEN)
    ctx = "\n" + test.transcript()
    c.contains("leader exec: new program announced", test.of(3),
               "is executing new program", ctx)
    c.contains("leader exec, thread unseen: plain breakpoint line", test.of(3),
               "\nBreakpoint 1, after_exec (n=2)", ctx)
    same(c, "leader exec, thread unseen: same transcript as gdbserver",
         transcript_lines(ref), transcript_lines(test), args.server, ctx)
    c.equal("leader exec, thread unseen: same program output",
            ref_server.stdout, test_server.stdout, ctx)
    (ref, ref_server), (test, test_server) = both(args, "leader-exec",
                                                  LEADER_EXEC_SEEN)
    ctx = "\n" + test.transcript()
    c.contains("leader exec, thread seen: the thread hit is named", test.of(3),
               "hit Breakpoint 1, after_exec (n=2)", ctx)
    same(c, "leader exec, thread seen: same transcript as gdbserver",
         transcript_lines(ref), transcript_lines(test), args.server, ctx)
    c.equal("leader exec, thread seen: same program output",
            ref_server.stdout, test_server.stdout, ctx)


def check_detach_killed(args, c):
    (ref, ref_server), (test, test_server) = both(args, "stopped",
                                                  DETACH_COMMANDS)
    ctx = "\n" + test.transcript() + "\n--- server stderr ---\n" + test_server.stderr
    c.contains("detach killed: program was killed", test.of(2),
               "killed state Z", ctx)
    c.contains("detach killed: detached", test.of(3), "detached]", ctx)
    same(c, "detach killed: same transcript as gdbserver",
         transcript_lines(ref), transcript_lines(test), args.server, ctx)
    c.equal("detach killed: --once server ends", 0,
            test_server.proc.returncode, ctx)
    c.equal("detach killed: same program output", ref_server.stdout,
            test_server.stdout, ctx)


def main(args, c):
    check_exec(args, c)
    check_leader(args, c)
    check_alone(args, c)
    check_group_exit(args, c)
    check_leader_exec(args, c)
    check_detach_killed(args, c)


if __name__ == "__main__":
    run_test("test_thread_ends", main)
