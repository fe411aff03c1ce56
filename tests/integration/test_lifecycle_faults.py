#!/usr/bin/env python3
"""Dying clients and dying programs.

The client disconnects while the program runs, while it is stopped at a
breakpoint and in the middle of a packet (a launched program left stopped is
kept for the next client, as by gdbserver; one left running is killed and
reaped; an attached one is detached with no int3 left in its code and no
tracer, also one recorded (`--attach --record`) whose thread stands in the
translating tracer's code cache: it runs on to its normal end; the server
serves the next client, also in --multi); the program is
SIGKILLed from outside while it runs and while it is stopped, plain and
while traced (`--record`, `record btrace`), and it execs or exits while
traced: gdb prints what it prints with gdbserver ("Program terminated with
signal SIGKILL, Killed."), the server is left with no zombie and serves the
next client.

gdb allows no trace reads once the program is gone (as with its own
`record full`: the recording ends with the process); while the program
lives the trace stays readable, which the traced cases check before the kill
and after an exec.

    python3 test_lifecycle_faults.py [--server gdbserver] [-v]

Against gdbserver the gdb transcripts are the same; what a server does with
the program when its client vanishes while it runs, or with an attached
program, differs (gdbserver keeps it for the next client, btstub kills a
launched one and detaches an attached one): those checks print NOTE.
"""

import os
import re
import time

from harness import (Server, load_base, marker_line, pid_alive, program, run_gdb,
                     run_test, symbol_offset, tracer_of, wait_until)
from rsp_client import RspClient, RspError

KILLED = "Program terminated with signal SIGKILL, Killed."


def state_of(pid):
    """The State letter of /proc/PID/status, or None if gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return re.search(r"^State:\s+(\S)", f.read(), re.M).group(1)
    except OSError:
        return None


def no_zombie(pid):
    return wait_until(lambda: state_of(pid) in (None,), 5)


def read_byte(pid, addr):
    with open("/proc/%d/mem" % pid, "rb") as mem:
        mem.seek(addr)
        return mem.read(1)


def next_client_served(c, label, server, kind="btstub"):
    if kind != "btstub" and "running" in label:
        # gdbserver hands the still-running program to the next client,
        # which then waits for its stop; btstub starts a fresh one.
        print("NOTE %s: gdbserver's next client waits for the old program" % label)
        return
    try:
        with RspClient.connect(server.port) as client:
            reply = client.request("?")
    except (RspError, OSError) as e:
        reply = "error: %s" % e
    c.matches("%s: the next client is served" % label, reply, r"^([TSWX][0-9a-f]{2}|E|OK)")


# --------------------------------------------------------------------------
# The program dies from outside

def check_sigkill(kind, c, label, options, setup, when):
    """gdb: setup commands, then a SIGKILL while stopped or running."""
    prog = program("spin")
    with Server(kind, [prog, "30"], options=options) as server:
        pid = server.inferior_pid
        tick = marker_line("spin.c", "tick_body")
        commands = ["break spin.c:%d" % tick, "continue"] + list(setup)
        if when == "stopped":
            commands += ["delete", "shell kill -9 %d" % pid, "continue"]
        else:
            commands += ["delete", "shell (sleep 1; kill -9 %d) &" % pid, "continue"]
        commands += ["info program", "info record"]
        result = run_gdb(commands, prog, server.address, timeout=60)
        c.contains("%s: gdb reports the SIGKILL" % label,
                   result.of_command("continue", 1), KILLED)
        c.contains("%s: no program left" % label,
                   result.of_command("info program"), "not being run")
        c.true("%s: no zombie" % label, no_zombie(pid),
               "pid %d state %s" % (pid, state_of(pid)))
        if kind == "btstub":
            next_client_served(c, label, server)
            c.true("%s: server alive" % label, server.proc.poll() is None, server.stderr)
        else:
            # gdbserver without --multi ends with its program; btstub
            # serves the next client a fresh one.
            print("NOTE %s: gdbserver exited with its program: %s" %
                  (label, server.proc.poll() is not None))
        return result


def check_sigkills(kind, c):
    for when in ("stopped", "running"):
        check_sigkill(kind, c, "SIGKILL while %s" % when, (), [], when)
    if kind != "btstub":
        print("SKIP traced SIGKILL cases (gdbserver has no software tracer)")
        return
    for when in ("stopped", "running"):
        r = check_sigkill(kind, c, "--record, SIGKILL while %s" % when, ("--record",),
                          ["reverse-stepi", "stepi"], when)
        c.matches("--record: the trace was readable before the kill (reverse-stepi)",
                  r.of_command("reverse-stepi"), r"^(0x[0-9a-f]+\s+)?\d+\s")
        r = check_sigkill(kind, c, "record btrace, SIGKILL while %s" % when, (),
                          ["record btrace", "stepi", "stepi", "info record"], when)
        c.contains("record btrace: the trace was readable before the kill",
                   r.of_command("info record"), "Recorded 2 instructions")
        c.contains("record btrace: gdb ends the recording with the process",
                   r.of_command("info record", 1), "No recording is currently active")


def check_exec_and_exit_traced(kind, c):
    if kind != "btstub":
        print("SKIP traced exec/exit (gdbserver has no software tracer)")
        return
    execer = program("execer")
    with Server(kind, [execer], options=("--record",)) as server:
        pid = server.inferior_pid
        result = run_gdb(["break after_exec", "continue", "reverse-stepi", "stepi",
                          "continue", "continue", "continue"], execer, server.address, timeout=60)
        c.contains("--record, exec: gdb follows the exec",
                   result.of_command("continue"), "is executing new program")
        c.contains("--record, exec: stops in the new image",
                   result.of_command("continue"), "Breakpoint 1, after_exec")
        c.true("--record, exec: the new image's trace is readable",
               "not" not in result.of_command("reverse-stepi").lower() or
               "history" in result.of_command("reverse-stepi").lower(),
               result.transcript())
        # A recorded program stops before exit_group, as under record full.
        c.contains("--record, exec: stops before the exit",
                   result.of_command("continue", 1), "Program stopped.")
        # Its end is held (the history outlives it) until the next continue.
        c.contains("--record, exec: the end is held",
                   result.of_command("continue", 2), "Program received signal SIGKILL")
        c.contains("--record, exec: runs to the exit",
                   result.of_command("continue", 3), "exited normally")
        c.true("--record, exec: no zombie", no_zombie(pid), "state %s" % state_of(pid))
    basic = program("basic")
    with Server(kind, [basic], options=("--record",)) as server:
        pid = server.inferior_pid
        result = run_gdb(["continue", "continue", "reverse-stepi", "continue", "continue", "reverse-stepi"],
                         basic, server.address, timeout=60)
        c.contains("--record, exit: stops before the exit",
                   result.of_command("continue"), "Program stopped.")
        c.contains("--record, exit: the end is held",
                   result.of_command("continue", 1), "Program received signal SIGKILL")
        c.contains("--record, exit: the history outlives the exit",
                   result.of_command("reverse-stepi"), "_exit")
        c.contains("--record, exit: gdb sees the exit",
                   result.of_command("continue", 3), "exited with code 013")
        # With the remote target gone gdb refuses on its own ("The program
        # is not being run." or "Target exec does not support this command.").
        c.matches("--record, exit: nothing to replay once the program is let go",
                  result.of_command("reverse-stepi", 1),
                  r"not being run|Target exec does not support")
        c.true("--record, exit: no zombie", no_zombie(pid), "state %s" % state_of(pid))
        next_client_served(c, "--record, exit", server)


# --------------------------------------------------------------------------
# The client vanishes

def resume(client):
    client.send_packet("vCont;c")
    if not client.no_ack:
        client.read_ack()


def check_disconnect_launched(kind, c, how):
    """Without --once: a program left stopped is kept (as by gdbserver), one
    left running is killed; the next client is served."""
    prog = program("spin")
    label = "client gone %s (launched)" % how
    with Server(kind, [prog, "30"], options=()) as server:
        pid = server.inferior_pid
        tick = load_base(pid, prog) + symbol_offset(prog, "tick")
        client = RspClient.connect(server.port)
        client.handshake()
        if how == "while stopped":
            client.request("Z0,%x,1" % tick)
            resume(client)
            client.read_packet(timeout=20)
        elif how == "while running":
            resume(client)
            time.sleep(0.3)
        else:  # in the middle of a packet
            client.send_raw(b"$vCont;c:p%x" % pid)
        client.close()
        time.sleep(0.3)
        c.true("%s: server alive" % label, server.proc.poll() is None, server.stderr)
        if how != "while running":
            # Left stopped: kept for the next client, as by gdbserver.
            c.true("%s: program kept, still traced" % label,
                   pid_alive(pid) and tracer_of(pid) == server.proc.pid,
                   "pid %d state %s tracer %s" % (pid, state_of(pid), tracer_of(pid)))
        elif kind == "btstub":
            c.true("%s: program killed and reaped" % label, no_zombie(pid),
                   "pid %d state %s" % (pid, state_of(pid)))
        else:
            print("NOTE %s: gdbserver keeps the program (state %s)" % (label, state_of(pid)))
        next_client_served(c, label, server, kind)


def check_disconnect_attached(kind, c, how):
    """--attach: the program is detached, runs on, keeps no int3."""
    prog = program("spin")
    label = "client gone %s (attached)" % how
    from harness import Server as _S  # noqa: F401
    import subprocess
    victim = subprocess.Popen([prog, "30"], start_new_session=True)
    try:
        time.sleep(0.2)
        tick = load_base(victim.pid, prog) + symbol_offset(prog, "tick")
        main = load_base(victim.pid, prog) + symbol_offset(prog, "main")
        original = {a: read_byte(victim.pid, a) for a in (tick, main)}
        with Server(kind, ["%d" % victim.pid], options=("--attach",)) as server:
            client = RspClient.connect(server.port)
            client.handshake()
            c.equal("%s: Z0 at main" % label, "OK", client.request("Z0,%x,1" % main))
            c.equal("%s: Z0 at tick" % label, "OK", client.request("Z0,%x,1" % tick))
            if how == "while stopped":
                resume(client)
                stop = client.read_packet(timeout=20)
                c.matches("%s: stopped at tick" % label, stop, r"^T05")
            elif how == "while running":
                client.request("z0,%x,1" % tick)
                resume(client)
                time.sleep(0.3)
            else:
                client.send_raw(b"$m%x,4" % main)
            client.close()
            if kind != "btstub":
                # gdbserver keeps the attached program stopped, int3s and
                # all, for the next client; btstub detaches it cleanly.
                time.sleep(0.5)
                print("NOTE %s: gdbserver keeps it: tracer %s, state %s, main byte %r" %
                      (label, tracer_of(victim.pid), state_of(victim.pid),
                       read_byte(victim.pid, main)))
                return
            c.true("%s: program no longer traced" % label,
                   wait_until(lambda: tracer_of(victim.pid) == 0, 5),
                   "tracer %s" % tracer_of(victim.pid))
            for name, addr in (("main", main), ("tick", tick)):
                c.equal("%s: no int3 left at %s" % (label, name), original[addr],
                        read_byte(victim.pid, addr))
            time.sleep(0.3)
            c.true("%s: program runs on" % label,
                   state_of(victim.pid) in ("R", "S"), "state %s" % state_of(victim.pid))
            c.true("%s: server exits after its attached program" % label,
                   server.wait_exit(10) is not None, server.stderr)
    finally:
        victim.kill()
        victim.wait()


def check_disconnect_attached_recorded(c):
    """--attach --record, the client gone while the program runs: its thread
    stands in the translating tracer's code cache (busy_loop makes no system
    call in its loop). btstub must move it out before it detaches and takes
    the cache away: the program runs on and ends as it would (it died of a
    SIGSEGV in the unmapped cache right after the detach)."""
    import subprocess
    label = "client gone while running (attached, --record)"
    victim = subprocess.Popen([program("busy_loop"), "4"], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        time.sleep(0.2)
        with Server("btstub", ["%d" % victim.pid], options=("--attach", "--record")) as server:
            client = RspClient.connect(server.port)
            client.handshake()
            resume(client)
            time.sleep(1.0)
            client.close()
            c.true("%s: program no longer traced" % label,
                   wait_until(lambda: tracer_of(victim.pid) == 0, 10),
                   "tracer %s\n%s" % (tracer_of(victim.pid), server.stderr))
            try:
                out, _ = victim.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                out = None
            c.equal("%s: the program ends normally" % label, 0, victim.returncode, server.stderr)
            c.matches("%s: the program prints its count" % label, out or "", r"^done \d+$")
            c.true("%s: server exits after its attached program" % label,
                   server.wait_exit(10) is not None, server.stderr)
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait()


def check_disconnect_multi(kind, c):
    prog = program("spin")
    label = "--multi, client gone while running"
    with Server(kind, [], options=("--multi",)) as server:
        client = RspClient.connect(server.port)
        client.handshake()
        client.request("!")
        stop = client.request("vRun;%s;3330" % prog.encode().hex())
        c.matches("%s: vRun" % label, stop, r"^T05")
        created = server.wait_stderr(r"^Process .* created; pid = (\d+)$", 5)
        pid = int(created.group(1)) if created else -1
        resume(client)
        time.sleep(0.3)
        client.close()
        time.sleep(0.3)
        if kind == "btstub":
            c.true("%s: program killed and reaped" % label, no_zombie(pid),
                   "pid %d state %s" % (pid, state_of(pid)))
        else:
            print("NOTE %s: gdbserver keeps the program (state %s)" % (label, state_of(pid)))
        try:
            with RspClient.connect(server.port) as client:
                client.handshake()
                client.request("!")
                again = client.request("vRun;%s;3330" % prog.encode().hex())
        except (RspError, OSError) as e:
            again = "error: %s" % e
        if kind == "btstub":
            c.matches("%s: the next client runs a program" % label, again, r"^T05")
        else:
            print("NOTE %s: gdbserver's next client: %s" % (label, again))


def main(args, c):
    kind = args.server
    for how in ("while running", "while stopped", "mid-packet"):
        check_disconnect_launched(kind, c, how)
        check_disconnect_attached(kind, c, how)
    if kind == "btstub":
        check_disconnect_attached_recorded(c)
    check_disconnect_multi(kind, c)
    check_sigkills(kind, c)
    check_exec_and_exit_traced(kind, c)


if __name__ == "__main__":
    run_test("test_lifecycle_faults", main)
