#!/usr/bin/env python3
"""SIGTERM, SIGHUP and SIGINT to the server (tests/programs/spin.c): btstub
ends as a client's hang-up ends it, then dies of the signal.

1. `btstub --attach :0 PID` with a client that set a breakpoint on tick(),
   hit it and continued (the int3 in place, the program running): SIGTERM.
   btstub dies of SIGTERM; the program is untraced, keeps running, and
   exits normally when told, having ticked on (a leftover int3 killed it
   with SIGTRAP).
2. The same under `--record`, SIGHUP: the program ran in the translating
   tracer's code cache, which goes with the detach.
3. `--attach` with no client connected yet, SIGINT: the same.
4. A program btstub started, recorded, running under a client: SIGTERM.
   btstub dies of it, and the program and every checkpoint copy of it are
   gone (as a hang-up kills a started program).

gdbserver 13.1 has no handler for these signals: in (1) its int3 stays and
the program dies of SIGTRAP (NOTE lines; the checks are btstub's).

    python3 test_termination_signals.py [--server gdbserver] [-v]
"""

import contextlib
import os
import signal
import subprocess
import tempfile
import time

from harness import (Server, kill_session, load_base, pid_alive, program, run_test, symbol_offset, tracer_of,
                     wait_until)
from rsp_client import RspClient

SPIN_SECONDS = "60"


@contextlib.contextmanager
def spinning(tmp, name):
    """A spin_O0 in its loop, with its marker file; gone afterwards."""
    marker = os.path.join(tmp, name)
    spin = subprocess.Popen([program("spin"), SPIN_SECONDS, marker], stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        time.sleep(0.3)  # into its loop
        yield spin, marker
    finally:
        kill_session(spin.pid)
        spin.wait(5)


def finish_spin(c, label, spin, marker, ticks_before):
    """Tells the program to stop; it must exit with 0 having ticked on."""
    open(marker + ".stop", "w").close()
    try:
        status = spin.wait(15)
    except subprocess.TimeoutExpired:
        status = None
    c.equal("%s: the program exits normally when told (no stray int3)" % label, 0, status)
    text = open(marker).read() if os.path.exists(marker) else ""
    ticks = int(text.split("=")[1]) if text.startswith("done ticks=") else -1
    c.true("%s: the program ticked on after btstub went" % label, ticks > ticks_before,
           "ticks %d at the signal, %d at the end (%r)" % (ticks_before, ticks, text))


def signalled(server, signo):
    """Sends the server `signo`; returns its exit status (None: still up)."""
    os.kill(server.proc.pid, signo)
    return server.wait_exit(15)


def gdbserver_note(kind, label, status, extra=""):
    """False for gdbserver, which has no handler for these signals: its
    status printed, nothing checked."""
    if kind == "btstub":
        return True
    print("NOTE %s: gdbserver's status %r%s" % (label, status, extra))
    return False


def address_in(pid, name):
    prog = program("spin")
    return load_base(pid, prog) + symbol_offset(prog, name)


def ticks_now(pid):
    with open("/proc/%d/mem" % pid, "rb") as mem:
        mem.seek(address_in(pid, "ticks"))
        return int.from_bytes(mem.read(8), "little")


def check_let_go(c, label, signo, status, stderr, spin, marker, ticks_before):
    """btstub died of `signo` after detaching the program, which runs on."""
    c.equal("%s: btstub dies of %s" % (label, signal.Signals(signo).name), -signo, status, stderr)
    c.true("%s: the program is no longer traced" % label,
           wait_until(lambda: tracer_of(spin.pid) == 0, 5), "TracerPid %r" % tracer_of(spin.pid))
    finish_spin(c, label, spin, marker, ticks_before)


def check_attached(kind, c, tmp, label, options, signo):
    with spinning(tmp, label.replace(" ", "_")) as (spin, marker):
        server = Server(kind, [str(spin.pid)], options=options)
        try:
            with RspClient.connect(server.port) as client:
                client.handshake()
                tick = address_in(spin.pid, "tick")
                c.equal("%s: breakpoint on tick" % label, "OK", client.request("Z0,%x,1" % tick))
                stop = client.request("vCont;c", timeout=20)
                c.true("%s: the breakpoint is hit" % label, stop.startswith("T05"), stop)
                client.send_packet("vCont;c")  # running on, the int3 in place
                time.sleep(0.5)
                ticks_before = ticks_now(spin.pid)
                status = signalled(server, signo)
        finally:
            server.stop()
        if not gdbserver_note(kind, label, status, ", program alive %s" % pid_alive(spin.pid)):
            return
        c.contains("%s: btstub detached the program" % label, server.stderr, "Detached from process %d" % spin.pid)
        check_let_go(c, label, signo, status, server.stderr, spin, marker, ticks_before)


def check_waiting_for_client(kind, c, tmp):
    label = "no client yet"
    with spinning(tmp, "waiting") as (spin, marker):
        server = Server(kind, [str(spin.pid)], options=("--attach",))
        try:
            ticks_before = ticks_now(spin.pid)
            status = signalled(server, signal.SIGINT)
        finally:
            server.stop()
        if not gdbserver_note(kind, label, status):
            return
        check_let_go(c, label, signal.SIGINT, status, server.stderr, spin, marker, ticks_before)


def programs_with(marker):
    """Pids of processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def check_started(kind, c, tmp):
    label = "started program"
    marker = os.path.join(tmp, "started")
    server = Server(kind, [program("spin"), SPIN_SECONDS, marker], options=("--record",) if kind == "btstub" else ())
    try:
        with RspClient.connect(server.port) as client:
            client.handshake()
            client.send_packet("vCont;c")
            time.sleep(1.0)  # running, recorded: checkpoint copies taken
            status = signalled(server, signal.SIGTERM)
    finally:
        server.stop()
    if not gdbserver_note(kind, label, status):
        return
    c.equal("%s: btstub dies of SIGTERM" % label, -signal.SIGTERM, status, server.stderr)
    c.true("%s: the program and its copies are gone" % label,
           wait_until(lambda: not programs_with(marker), 5), "left: %r" % programs_with(marker))


def main(args, c):
    with tempfile.TemporaryDirectory(prefix="btstub-test-") as tmp:
        check_attached(args.server, c, tmp, "attached", ("--attach",), signal.SIGTERM)
        if args.server == "btstub":
            check_attached(args.server, c, tmp, "attached recorded", ("--attach", "--record"), signal.SIGHUP)
        check_waiting_for_client(args.server, c, tmp)
        check_started(args.server, c, tmp)


if __name__ == "__main__":
    run_test("test_termination_signals", main)
