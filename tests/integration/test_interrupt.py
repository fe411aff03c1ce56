#!/usr/bin/env python3
"""Interrupting a running program (tests/programs/spin.c), with gdb run
interactively on a pseudo-terminal:

- Ctrl-C (byte 0x03 typed on gdb's terminal) while `continue` runs stops the
  program with "Program received signal SIGINT, Interrupt."; the program's
  variables can be read; it can be continued and interrupted again (its
  counter keeps growing);
- the `interrupt` command after `continue &` does the same;
- over TCP and over stdio (`target remote | SERVER - prog`);
- a Ctrl-C byte that comes while the program is stopped (gdb sends it
  while it handles a stop, e.g. reading a library's symbols, and then waits
  for the SIGINT stop) stops the next resume with SIGINT, as gdbserver's
  does (checked with a raw client, gdbserver beside).

    python3 test_interrupt.py [--server gdbserver] [-v]
"""

import shlex
import time

import harness
from harness import Server, program, run_test, server_path
from pty_gdb import PtyGdb
from rsp_client import RspClient, RspTimeout

SIGINT_STOP = r"Program received signal SIGINT, Interrupt\.\n"
PROMPT = r"^\(gdb\) "


def counter_value(c, label, text):
    m = c.matches(label, text, r"^\$\d+ = (\d+)$")
    return int(m.group(1)) if m else None


def session(c, gdb, label):
    gdb.expect(PROMPT, 30)
    # Run into the spin loop first, so the program is surely past start-up
    # (shared libraries loaded) when the interrupts come.
    c.matches(label + "break", gdb.command("break tick"), r"^Breakpoint 1 at ")
    c.matches(label + "continue to breakpoint", gdb.command("continue"),
              r"^Breakpoint 1, tick \(\) at spin\.c:\d+$")
    gdb.command("delete")
    first = counter_value(c, label + "counter readable before running",
                          gdb.command("print counter"))
    values = []
    for round_ in (1, 2):
        gdb.send("continue\n")
        gdb.expect(r"^Continuing\.")
        time.sleep(0.4)
        gdb.send("\x03")
        m = gdb.expect(SIGINT_STOP + "|" + PROMPT + "$", 15)
        c.true(label + "Ctrl-C stop %d reported as SIGINT" % round_,
               "SIGINT" in m.group(0), "transcript:\n" + gdb.log)
        gdb.expect(PROMPT, 15)
        values.append(counter_value(
            c, label + "print after Ctrl-C %d" % round_,
            gdb.command("print counter")))
    c.true(label + "program ran between the interrupts",
           None not in values and first is not None and
           first < values[0] < values[1], "counter values: %r then %r" %
           (first, values))

    gdb.command("continue &")
    time.sleep(0.4)
    gdb.send("interrupt\n")
    m = gdb.expect(SIGINT_STOP + "|" + PROMPT + "interrupt\n" + PROMPT + "$", 15)
    if "SIGINT" not in m.group(0):
        m = gdb.expect(SIGINT_STOP, 15)
    c.true(label + "interrupt command stops with SIGINT", "SIGINT" in m.group(0),
           "transcript:\n" + gdb.log)
    time.sleep(0.2)
    after = counter_value(c, label + "print after interrupt command",
                          gdb.command("print counter"))
    c.true(label + "program ran before the interrupt command",
           after is not None and values[-1] is not None and after > values[-1],
           "counter %r then %r" % (values[-1], after))
    killed = gdb.command("kill")
    c.matches(label + "kill after interrupt", killed,
              r"^\[Inferior 1 \(process \d+\) killed\]$")
    if harness.VERBOSE:
        print(gdb.log)


def interrupt_while_stopped(c, kind, prog):
    with Server(kind, [prog, "60"]) as server, RspClient.connect(server.port) as client:
        client.handshake()
        first = client.request("?")
        client.send_raw(b"\x03")
        time.sleep(0.3)
        client.send_packet("vCont;c")
        try:
            stop = client.read_packet(timeout=10)
        except RspTimeout:
            stop = "(no stop in 10 s)"
        c.matches("%s: Ctrl-C while stopped stops the next resume with SIGINT" % kind, stop,
                  r"^T02.*thread:", "first stop: %s\nafter the resume: %s" % (first, stop))


def main(args, c):
    prog = program("spin")
    servers = [args.server] + (["gdbserver"] if args.server != "gdbserver" else [])
    for kind in servers:
        interrupt_while_stopped(c, kind, prog)
    with Server(args.server, [prog, "60"]) as server, \
            PtyGdb(prog, ["target remote " + server.address]) as gdb:
        session(c, gdb, "tcp: ")
        gdb.send("quit\n")
        c.equal("tcp: --once server exits after quit", 0, server.wait_exit(10),
                server.stderr)

    target = "| " + shlex.join([server_path(args.server), "-", prog, "60"])
    with PtyGdb(prog, ["target remote " + target]) as gdb:
        session(c, gdb, "stdio: ")


if __name__ == "__main__":
    run_test("test_interrupt", main)
