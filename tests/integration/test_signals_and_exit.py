#!/usr/bin/env python3
"""Signals, exits, kill and detach (tests/programs/crash.c, spin.c):

- a SIGSEGV stop is reported as such, in the right frame; continuing lets the
  program die: "Program terminated with signal SIGSEGV";
- SIGABRT stops too, and with `handle SIGABRT nostop noprint` the program
  dies by the signal without stopping (the signal is passed on resume);
- normal exits: code 0 ("exited normally") and code 3 ("exited with code 03");
- `kill` at a breakpoint ends the program (its pid disappears) and a --once
  server exits;
- `detach` at a breakpoint lets the program run to its end on its own (it
  writes a marker file), with the breakpoint removed.

    python3 test_signals_and_exit.py [--server gdbserver] [-v]
"""

import os
import re
import tempfile

from harness import (Server, marker_line, pid_alive, program, run_gdb,
                     run_gdb_tcp, run_test, wait_until)


def inferior_line(pid, what):
    return r"^\[Inferior 1 \(process %d\) %s\]$" % (pid, what)


def check_segv(args, c):
    result, server = run_gdb_tcp(args.server, program("crash"), [],
                                 ["continue", "bt", "continue",
                                  "info registers rip"])
    ctx = result.transcript()
    line = marker_line("crash.c", "fault_line")
    c.lines("SIGSEGV stop", result.of(0), [
        "Program received signal SIGSEGV, Segmentation fault."], ctx)
    c.matches("SIGSEGV frame line", result.of(0),
              r"^0x[0-9a-f]+ in fault_here \(v=3\) at crash\.c:%d$" % line, ctx)
    c.matches("SIGSEGV backtrace reaches main", result.of(1),
              r"^#1  0x[0-9a-f]+ in main \(argc=1, argv=0x[0-9a-f]+\) at crash\.c:%d$"
              % marker_line("crash.c", "main_fault"), ctx)
    c.lines("continue after SIGSEGV: death by signal", result.of(2), [
        "Program terminated with signal SIGSEGV, Segmentation fault.",
        "The program no longer exists."], ctx)
    c.lines("no registers after death", result.of(3),
            ["The program has no registers now."], ctx)
    c.equal("--once server exits after the session", 0, server.proc.returncode,
            server.stderr)


def check_abort(args, c):
    result, _ = run_gdb_tcp(args.server, program("crash"), ["abort"],
                            ["continue", "continue"])
    ctx = result.transcript()
    c.lines("SIGABRT stop", result.of(0),
            ["Program received signal SIGABRT, Aborted."], ctx)
    c.lines("continue after SIGABRT: death by signal", result.of(1), [
        "Program terminated with signal SIGABRT, Aborted.",
        "The program no longer exists."], ctx)

    result, _ = run_gdb_tcp(args.server, program("crash"), ["abort"],
                            ["handle SIGABRT nostop noprint", "continue"])
    ctx = result.transcript()
    c.lines("death by signal without a stop", result.of(1), [
        "Program terminated with signal SIGABRT, Aborted.",
        "The program no longer exists."], ctx)
    c.not_contains("no SIGABRT stop reported", result.of(1),
                   "Program received signal", ctx)


def check_exits(args, c):
    result, server = run_gdb_tcp(args.server, program("crash"), ["exit", "0"],
                                 ["continue"])
    pid = server.inferior_pid or -1
    c.matches("exit code 0", result.of(0),
              inferior_line(pid, "exited normally"), result.transcript())
    result, server = run_gdb_tcp(args.server, program("crash"), ["exit", "3"],
                                 ["continue"])
    pid = server.inferior_pid or -1
    c.matches("exit code 3", result.of(0),
              inferior_line(pid, "exited with code 03"), result.transcript())


def check_kill(args, c):
    result, server = run_gdb_tcp(
        args.server, program("crash"), ["exit", "5"],
        ["break prepare", "continue", "kill", "info registers rip"])
    ctx = result.transcript()
    pid = server.inferior_pid
    c.true("server reported the inferior pid", pid is not None, server.stderr)
    pid = pid or -1
    c.lines("breakpoint before kill", result.of(1), [
        "Breakpoint 1, prepare (v=3) at crash.c:%d" %
        marker_line("crash.c", "prepare_body")], ctx)
    c.matches("kill", result.of(2), inferior_line(pid, "killed"), ctx)
    c.lines("no registers after kill", result.of(3),
            ["The program has no registers now."], ctx)
    c.true("killed program is gone", wait_until(lambda: not pid_alive(pid), 5),
           "pid %d still alive" % pid)
    c.equal("--once server exits after kill and disconnect", 0,
            server.proc.returncode, server.stderr)


def check_detach(args, c):
    with tempfile.TemporaryDirectory(prefix="btstub-test-") as tmp:
        marker = os.path.join(tmp, "spin.done")
        # spin runs 1.5 s, then writes the marker and exits 0. The detached
        # program stays in the server's session, so it must be done before
        # the harness cleans that session up.
        server = Server(args.server, [program("spin"), "1.5", marker])
        try:
            result = run_gdb(["break tick", "continue", "print ticks",
                              "detach", "info registers rip"], program("spin"),
                             server.address)
            server.wait_exit(10)
            pid = server.inferior_pid or -1
            finished = wait_until(lambda: os.path.exists(marker) and
                                  not pid_alive(pid), 15)
        finally:
            server.stop()
        ctx = result.transcript()
        pid = server.inferior_pid or -1
        c.lines("breakpoint before detach", result.of(1), [
            "Breakpoint 1, tick () at spin.c:%d" %
            marker_line("spin.c", "tick_body")], ctx)
        c.value("print before detach", result.of(2), "0")
        c.lines("detach", result.of(3),
                ["[Inferior 1 (process %d) detached]" % pid], ctx)
        c.lines("nothing to debug after detach", result.of(4),
                ["The program has no registers now."], ctx)
        c.equal("--once server exits after detach", 0, server.proc.returncode,
                server.stderr)
        c.true("detached program ran to its end", finished,
               "marker %s exists: %s; pid %d alive: %s" %
               (marker, os.path.exists(marker), pid, pid_alive(pid)))
        if finished:
            with open(marker) as f:
                text = f.read()
            m = re.fullmatch(r"done ticks=(\d+)\n", text)
            # The breakpoint on tick() would have killed it with SIGTRAP had
            # it stayed in; more than one tick proves it ran on normally.
            c.true("detached program kept ticking", m and int(m.group(1)) > 1,
                   "marker file says %r" % text)


def main(args, c):
    check_segv(args, c)
    check_abort(args, c)
    check_exits(args, c)
    check_kill(args, c)
    check_detach(args, c)


if __name__ == "__main__":
    run_test("test_signals_and_exit", main)
