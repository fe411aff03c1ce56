#!/usr/bin/env python3
"""Extended remote: `SERVER --multi COMM` + gdb's `target extended-remote`
(tests/programs/basic.c, spin.c):

1. One gdb session against `--once --multi` (no program at start):
   `run alpha beta` (exit code 07 proves argv), `run x` again after the exit
   (exit code 014), `break main` + `run` + `kill` + `run` + `continue`,
   `info os processes` lists a spinning program by pid, `attach` to it + `bt`
   + `detach`, a bad `attach` fails and the session goes on (attach again,
   detach), `monitor exit` ends the server; the spinning program survives,
   untraced.
2. `SERVER --once COMM PROG ARGS` (no --multi) with `target extended-remote`:
   the program runs to its end (07), then `run x` starts it again (014).
3. Without --once, `disconnect` in multi mode: the server keeps listening
   for the next gdb; the program it launched, left stopped, is kept for it
   (as by gdbserver); btstub detaches the one it attached (still running,
   untraced), where gdbserver keeps that one too (NOTE line).

4. Recording is the program's, as gdb's `record` is: `monitor record
   start` (btstub only) records the program it was given in, and after
   `kill` + `run` the new one is not recorded; under `--record` every run
   is, from its start.

5. A second inferior (add-inferior) while the first program lives: its
   `run` and `attach` are refused (btstub debugs one program at a time),
   and the first program runs on to its end (gdbserver 13.1 debugs both:
   NOTE line).

A failed `attach` must leave the session usable (btstub only: gdbserver 13.1
crashes on the next request, NOTE line).

    python3 test_multi.py [--server gdbserver] [-v]
"""

import os
import re
import subprocess
import tempfile
import time

from harness import (Server, kill_session, pid_alive, program, run_gdb, run_test, tracer_of, wait_until)

BAD_PID = 0x3ffffff0  # valid on the wire, never a live pid on this machine


def exited(code):
    return r"^\[Inferior 1 \(process \d+\) exited with code %s\]$" % code


def start_spin(tmp):
    marker = os.path.join(tmp, "spin.done")
    spin = subprocess.Popen([program("spin"), "60", marker],
                            stdin=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.3)  # into its loop
    return spin


def stop_spin(spin):
    kill_session(spin.pid)
    spin.wait(5)


def check_multi_session(kind, c, spin):
    basic = program("basic")
    pid = spin.pid
    server = Server(kind, [], options=("--once", "--multi"))
    commands = [
        "target extended-remote " + server.address,   # 0
        "set remote exec-file " + basic,              # 1
        "run alpha beta",                             # 2
        "run x",                                      # 3
        "break main",                                 # 4
        "run",                                        # 5
        "print argc",                                 # 6
        "kill",                                       # 7
        "run alpha beta",                             # 8
        "print argc",                                 # 9
        "continue",                                   # 10
        "delete",                                     # 11
        "info os processes",                          # 12
        "attach %d" % pid,                            # 13
        "bt",                                         # 14
        "detach",                                     # 15
        "attach %d" % pid,                            # 16
        "print counter > 0",                          # 17
        "detach",                                     # 18
        "attach %d" % BAD_PID,                        # 19
        "monitor help",                               # 20
        "file " + basic,                              # 21
        "run alpha beta",                             # 22
        "monitor exit",                               # 23
    ]
    try:
        result = run_gdb(commands, basic, None, timeout=90)
        server.wait_exit(10)
    finally:
        server.stop()
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.matches("run with arguments: exit code shows argv", result.of(2),
              exited("07"), ctx)
    c.matches("second run after the exit", result.of(3), exited("014"), ctx)
    c.matches("run stops at the breakpoint", result.of(5),
              r"^Breakpoint 1, main \(argc=2, argv=0x[0-9a-f]+\) at "
              r"\S*basic\.c:\d+$", ctx)
    c.value("run without arguments reuses the last ones", result.of(6), "2")
    c.matches("kill", result.of(7),
              r"^\[Inferior 1 \(process \d+\) killed\]$", ctx)
    c.matches("run after kill stops at the breakpoint", result.of(8),
              r"^Breakpoint 1, main \(argc=3, ", ctx)
    c.value("run after kill got its arguments", result.of(9), "3")
    c.matches("the restarted program runs to its end", result.of(10),
              exited("07"), ctx)
    c.matches("info os processes: header", result.of(12),
              r"^pid\s+user\s+command\s+cores\s*$", ctx)
    c.matches("info os processes: the spinning program by pid", result.of(12),
              r"^%d\s+\S+\s+\S*spin_O0 60 \S+spin\.done\s+[0-9,]+\s*$" % pid,
              ctx)
    # gdb leaves the address out of frame #0 when the attach stopped the
    # program at the start of a line of main itself (seen under load).
    c.matches("bt after attach shows main", result.of(14),
              r"^#\d+  (0x[0-9a-f]+ in )?main \(argc=3, argv=0x[0-9a-f]+\) at "
              r"\S*spin\.c:\d+$", ctx)
    c.lines("detach", result.of(15),
            ["[Inferior 1 (process %d) detached]" % pid], ctx)
    c.value("attach again after detach", result.of(17), "1")
    c.lines("detach again", result.of(18),
            ["[Inferior 1 (process %d) detached]" % pid], ctx)
    c.contains("bad attach fails", result.of(19),
               "Attaching to process %d failed" % BAD_PID, ctx)
    if kind == "btstub":
        c.contains("the server still answers after a bad attach",
                   result.of(20), "Quit GDBserver", ctx)
        c.matches("run works after a bad attach", result.of(22), exited("07"),
                  ctx)
        c.equal("monitor exit ends the --multi server", 0,
                server.proc.returncode, server.stderr)
    else:
        # gdbserver 13.1 dies (SIGSEGV) on the next request after a failed
        # vAttach; btstub is specified to carry on.
        print("NOTE gdbserver after a failed attach: %r" %
              result.of(20).strip())
    c.true("spinning program alive after the session", pid_alive(pid) and
           spin.poll() is None)
    c.true("spinning program no longer traced",
           wait_until(lambda: tracer_of(pid) == 0, 5),
           "TracerPid %r" % tracer_of(pid))


def check_extended_with_program(kind, c):
    basic = program("basic")
    server = Server(kind, [basic, "alpha", "beta"], options=("--once",))
    try:
        result = run_gdb(["target extended-remote " + server.address,
                          "continue", "run x", "info inferiors"],
                         basic, None, timeout=60)
    finally:
        server.stop()
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.matches("extended-remote on a started program: runs to its end",
              result.of(1), exited("07"), ctx)
    c.matches("extended-remote on a started program: run starts it again",
              result.of(2), exited("014"), ctx)


def check_record_per_run(c):
    basic = program("basic")
    status = "monitor record status"
    for options, again in ((("--once", "--multi"), "per thread"),
                           (("--once", "--multi", "--record"), "every thread")):
        server = Server("btstub", [], options=options)
        commands = [
            "target extended-remote " + server.address,  # 0
            "set remote exec-file " + basic,             # 1
            "break main",                                # 2
            "run",                                       # 3
            "monitor record start",                      # 4
            status,                                      # 5
            "kill",                                      # 6
            "run",                                       # 7
            status,                                      # 8
            "kill",                                      # 9
        ]
        try:
            result = run_gdb(commands, basic, None, timeout=60)
        finally:
            server.stop()
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        label = " ".join(options)
        c.contains("%s: recording after monitor record start" % label,
                   result.of(5), "): every thread;", ctx)
        c.matches("%s: the second run stops at main" % label, result.of(7),
                  r"^Breakpoint 1, main \(", ctx)
        c.contains("%s: the second run's recording" % label, result.of(8),
                   "): %s;" % again, ctx)
        thread_line = r"^\s+thread \d+: not recording$"
        if again == "per thread":
            c.matches("%s: the second run's thread not recorded" % label,
                      result.of(8), thread_line, ctx)
        else:
            c.true("%s: the second run's thread recorded" % label,
                   not re.search(thread_line, result.of(8), re.M), ctx)


def launched_pids(server):
    return [int(p) for p in re.findall(r"^Process .* created; pid = (\d+)$",
                                       server.stderr, re.M)]


def check_disconnect(kind, c, spin):
    spin_prog = program("spin")
    server = Server(kind, [], options=("--multi",))
    try:
        result = run_gdb(["target extended-remote " + server.address,
                          "set remote exec-file " + spin_prog,
                          "break tick", "run 60", "disconnect"],
                         spin_prog, None, timeout=60)
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.matches("disconnect test: program stopped in tick", result.of(3),
                  r"^Breakpoint 1, tick \(\) at \S*spin\.c:\d+$", ctx)
        pids = launched_pids(server)
        c.equal("disconnect test: one program launched", 1, len(pids), ctx)
        if pids:
            # Left stopped at the breakpoint: kept for the next client, as
            # by gdbserver (the next client's `attach` then replaces it).
            c.true("launched program kept on disconnect", pid_alive(pids[0]), ctx)

        result = run_gdb(["target extended-remote " + server.address,
                          "attach %d" % spin.pid, "print counter > 0",
                          "disconnect"], spin_prog, None, timeout=60)
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.value("server still listening: second gdb attaches", result.of(2),
                "1")
        if kind == "btstub":
            c.true("attached program detached on disconnect",
                   wait_until(lambda: tracer_of(spin.pid) == 0, 10),
                   "TracerPid %r" % tracer_of(spin.pid))
        else:
            print("NOTE gdbserver keeps attached pid %d traced: TracerPid %r"
                  % (spin.pid, tracer_of(spin.pid)))
        c.true("attached program still running", pid_alive(spin.pid) and
               spin.poll() is None)
        c.true("server still running after two disconnects",
               server.proc.poll() is None, server.stderr)
    finally:
        server.stop()


def check_second_inferior(kind, c, spin):
    """gdb's add-inferior: a second `run` or `attach` while the first
    program lives. btstub debugs one program at a time: it refuses, and the
    first program stays gdb's to continue or detach (gdbserver 13.1 debugs
    both)."""
    basic = program("basic")
    server = Server(kind, [], options=("--once", "--multi"))
    try:
        result = run_gdb(["target extended-remote " + server.address,   # 0
                          "set remote exec-file " + basic,              # 1
                          "break compute",                              # 2
                          "run alpha beta",                             # 3
                          "add-inferior",                               # 4
                          "inferior 2",                                 # 5
                          "set remote exec-file " + basic,              # 6
                          "file " + basic,                              # 7
                          "run",                                        # 8
                          "attach %d" % spin.pid,                       # 9
                          "inferior 1",                                 # 10
                          "delete",                                     # 11
                          "continue",                                   # 12
                          "monitor exit"],                              # 13
                         basic, None, timeout=60)
        server.wait_exit(10)
    finally:
        server.stop()
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.matches("second inferior: the first program stops at its breakpoint",
              result.of(3), r"^Breakpoint 1, compute ", ctx)
    if kind != "btstub":
        print("NOTE gdbserver runs a second inferior: %r" % result.of(8).strip()[-80:])
        return
    # gdb shows its own words for a failed vRun or vAttach, not the E. text.
    c.contains("second inferior: run is refused while the first program lives",
               result.of(8), "on the remote target failed", ctx)
    c.equal("second inferior: no second program started", 1, len(launched_pids(server)), ctx)
    c.contains("second inferior: attach is refused too", result.of(9),
               "Attaching to process %d failed" % spin.pid, ctx)
    c.matches("second inferior: the first program runs on to its end",
              result.of(12), exited("07"), ctx)
    c.true("second inferior: the spinning program was never traced",
           tracer_of(spin.pid) == 0 and spin.poll() is None,
           "TracerPid %r" % tracer_of(spin.pid))


def main(args, c):
    with tempfile.TemporaryDirectory(prefix="btstub-test-") as tmp:
        spin = start_spin(tmp)
        try:
            check_multi_session(args.server, c, spin)
            check_extended_with_program(args.server, c)
            check_second_inferior(args.server, c, spin)
            check_disconnect(args.server, c, spin)
            if args.server == "btstub":
                check_record_per_run(c)
        finally:
            stop_spin(spin)


if __name__ == "__main__":
    run_test("test_multi", main)
