#!/usr/bin/env python3
"""--attach PID (tests/programs/spin.c, started by this test):

1. `SERVER --once --attach :0 PID`, gdb given the program file: bt shows the
   program's main; a breakpoint on tick() is hit; `detach`; the program is
   untraced and still running.
2. Attach again, gdb given no file (it learns the program from the target:
   qXfer:exec-file and vFile): bt still shows main; `detach`.
3. btstub only: attach with --record, break, reverse-stepi, stepi, detach:
   the translating tracer's code cache and log are no longer in the
   program's maps (they were left behind).
4. The program is told to stop (marker.stop file); it must exit normally
   with code 0 and write its tick count, which must have grown past the
   value seen at the breakpoint: a leftover int3 in tick() would have killed
   it with SIGTRAP instead.

    python3 test_attach.py [--server gdbserver] [-v]
"""

import os
import re
import subprocess
import tempfile
import time

from harness import (Server, kill_session, marker_line, pid_alive, program, run_gdb, run_test, tracer_of, wait_until)
from translate_compare import read_maps


def attach_session(kind, pid, commands, program_path, options=("--once", "--attach"), extra_init=()):
    server = Server(kind, [str(pid)], options=options)
    try:
        result = run_gdb(commands, program_path, server.address, timeout=60, extra_init=extra_init)
        server.wait_exit(10)
    finally:
        server.stop()
    return result, server


def main(args, c):
    prog = program("spin")
    with tempfile.TemporaryDirectory(prefix="btstub-test-") as tmp:
        marker = os.path.join(tmp, "spin.done")
        spin = subprocess.Popen([prog, "60", marker], stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            run_attach_checks(args.server, c, prog, spin, marker)
        finally:
            kill_session(spin.pid)
            spin.wait(5)


def run_attach_checks(kind, c, prog, spin, marker):
    pid = spin.pid
    time.sleep(0.3)  # let it get into its loop
    result, server = attach_session(
        kind, pid, ["bt", "print counter > 0", "break tick", "continue",
                    "print ticks", "detach"], prog)
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.contains("server reports the attach", server.stderr,
               "Attached; pid = %d" % pid, ctx)
    c.matches("bt shows the program's main", result.of(0),
              r"^#\d+  (?:0x[0-9a-f]+ in )?main \(argc=3, argv=0x[0-9a-f]+\) at spin\.c:\d+$",
              ctx)
    c.value("program was running before the attach", result.of(1), "1")
    c.lines("breakpoint hit after attach", result.of(3), [
        "Breakpoint 1, tick () at spin.c:%d" % marker_line("spin.c", "tick_body")],
        ctx)
    m = c.matches("ticks readable", result.of(4), r"^\$\d+ = (\d+)$", ctx)
    ticks_at_break = int(m.group(1)) if m else None
    c.lines("detach", result.of(5),
            ["[Inferior 1 (process %d) detached]" % pid], ctx)
    c.equal("--once server exits after detach", 0, server.proc.returncode,
            server.stderr)
    c.true("program alive after detach", pid_alive(pid) and spin.poll() is None)
    c.true("program no longer traced", wait_until(
        lambda: tracer_of(pid) == 0, 5), "TracerPid %r" % tracer_of(pid))

    # gdb's default sysroot (target:): the file and its libraries read
    # through vFile, as a gdb on another machine reads them.
    result, server = attach_session(kind, pid, ["bt", "detach"], None, extra_init=("set sysroot target:",))
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.matches("attach without a local file: bt shows main", result.of(0),
              r"^#\d+  (?:0x[0-9a-f]+ in )?main \(argc=3, argv=0x[0-9a-f]+\) at "
              r"\S*spin\.c:\d+$", ctx)
    c.lines("attach without a local file: detach", result.of(1),
            ["[Inferior 1 (process %d) detached]" % pid], ctx)
    c.true("program alive after second detach",
           pid_alive(pid) and spin.poll() is None)

    if kind == "btstub":
        recorded_attach(c, prog, spin)

    open(marker + ".stop", "w").close()
    try:
        status = spin.wait(15)
    except subprocess.TimeoutExpired:
        status = None
    c.equal("program exits normally when told (no stray int3)", 0, status)
    text = open(marker).read() if os.path.exists(marker) else ""
    m = c.matches("program wrote its tick count", text, r"^done ticks=(\d+)$")
    if m and ticks_at_break is not None:
        c.true("program kept running tick() after detach",
               int(m.group(1)) > ticks_at_break + 1,
               "ticks at breakpoint %d, at the end %s" %
               (ticks_at_break, m.group(1)))


def recorded_attach(c, prog, spin):
    """Attached with --record, the translating tracer maps its code cache
    and a log into the program; a detach takes them out again (they were
    left there, and piled up with each new attach)."""
    pid = spin.pid
    before = set(read_maps(pid))
    result, server = attach_session(
        "btstub", pid, ["break tick", "continue", "reverse-stepi", "monitor record status", "stepi", "detach"],
        prog, options=("--once", "--attach", "--record"))
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.contains("--record attach: the translating tracer ran the program", result.of(3),
               "branches logged by translated code", ctx)
    c.lines("--record attach: detach", result.of(5), ["[Inferior 1 (process %d) detached]" % pid], ctx)
    c.true("--record attach: program alive after detach", pid_alive(pid) and spin.poll() is None)
    added = sorted(set(read_maps(pid)) - before)
    c.true("--record attach: detach leaves none of btstub's mappings in the program", not added,
           "mappings added: %r\n%s" % (added, ctx))


if __name__ == "__main__":
    run_test("test_attach", main)
