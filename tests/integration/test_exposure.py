#!/usr/bin/env python3
"""Who can reach the server, and what a connected client may do
(docs/security.md):

a listen address other than loopback (0.0.0.0:PORT) prints a warning that
anyone who can reach the port controls the program, loopback addresses do
not; --once closes the listener once the first client is in (a second
connect is refused while the first is served); --no-vfile answers vFile as
unsupported (gdb still debugs, reading the local file); --no-run refuses
vRun, vAttach and R (in --multi and after the program has exited) while the
program given on the command line is still served; --help lists both.

    python3 test_exposure.py [--server gdbserver] [-v]

gdbserver has neither the warning nor --no-vfile/--no-run: against it only
the --once check runs (the others print SKIP).
"""

import errno
import re
import socket
import time

from harness import (Server, pid_alive, program, run_command, run_gdb,
                     run_test, server_path, wait_until)
from rsp_client import RspClient, RspError, hexs

WARNING = r"warning: listening on .*anyone who can reach port \d+ controls the program"


def check_warning(kind, c):
    with Server(kind, [program("spin"), "30"], comm="0.0.0.0:0") as server:
        c.matches("0.0.0.0: warning names the risk", server.stderr, WARNING)
        c.matches("0.0.0.0: warning points at the restrictions", server.stderr,
                  r"--no-vfile, --no-run")
    for comm in ("127.0.0.1:0", ":0", "localhost:0"):
        with Server(kind, [program("spin"), "30"], comm=comm) as server:
            c.true("%s: no warning" % comm,
                   not re.search(WARNING, server.stderr), server.stderr)


def connect_result(port):
    """'connected' or the errno name of a refused connect."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    try:
        # A listener with a backlog accepts at TCP level; only a reply proves
        # the server serves this connection, and with --once it must not.
        s.sendall(b"$?#3f")
        s.settimeout(1.0)
        try:
            data = s.recv(100)
        except socket.timeout:
            data = b""
        return "served" if data.startswith(b"+") else "connected, unserved"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()


def check_once_closes_listener(kind, c):
    with Server(kind, [program("spin"), "30"], options=("--once",)) as server:
        with RspClient.connect(server.port) as first:
            reply = first.request("?")
            c.matches("--once: the first client is served", reply, r"^[TS]")
            second = connect_result(server.port)
            c.equal("--once: a second connect is refused while the first is in",
                    "ECONNREFUSED", second)
            c.matches("--once: the first client still served", first.request("?"),
                      r"^[TS]")
        c.true("--once: the server exits with its client",
               server.wait_exit(10) is not None, server.stderr)


def check_help(path, c):
    status, out, err = run_command([path, "--help"], 10)
    c.contains("--help lists --no-vfile", out, "--no-vfile")
    c.contains("--help lists --no-run", out, "--no-run")


def vfile_open(client, path):
    client.request("vFile:setfs:0")
    return client.request("vFile:open:%s,0,0" % hexs(path))


def check_no_vfile(kind, c):
    prog = program("basic")
    with Server(kind, [prog], options=("--once",)) as server:
        with RspClient.connect(server.port) as client:
            client.handshake()
            c.matches("without --no-vfile: vFile:open reads any file",
                      vfile_open(client, "/etc/passwd"), r"^F[0-9a-f]+$")
    with Server(kind, [prog], options=("--once", "--no-vfile")) as server:
        with RspClient.connect(server.port) as client:
            client.handshake()
            c.equal("--no-vfile: vFile:open is unsupported", "",
                    vfile_open(client, "/etc/passwd"))
            c.equal("--no-vfile: vFile:pread is unsupported", "",
                    client.request("vFile:pread:0,10,0"))
            c.equal("--no-vfile: vFile:readlink is unsupported", "",
                    client.request("vFile:readlink:%s" % hexs("/proc/self/exe")))
    with Server(kind, [prog], options=("--once", "--no-vfile")) as server:
        result = run_gdb(["break main", "continue", "remote get /etc/hostname /dev/null",
                          "continue"], prog, server.address)
        c.contains("--no-vfile: gdb still debugs (local file)",
                   result.of_command("continue"), "Breakpoint 1, main")
        c.true("--no-vfile: gdb cannot fetch files",
               "Successfully fetched" not in result.of_command(
                   "remote get /etc/hostname /dev/null"), result.transcript())
        c.contains("--no-vfile: the program runs to its end",
                   result.of_command("continue", 1), "exited with code")


def check_no_run_multi(kind, c):
    spin = program("spin")
    basic = program("basic")
    victim = Server(kind, [spin, "30"], options=("--once",))
    try:
        victim_pid = victim.inferior_pid
        with Server(kind, [], options=("--multi", "--no-run")) as server:
            with RspClient.connect(server.port) as client:
                client.handshake()
                c.equal("--no-run: ! still enters extended mode", "OK",
                        client.request("!"))
                c.matches("--no-run: vRun refused", client.request(
                    "vRun;%s" % hexs(basic)), r"^E")
                c.matches("--no-run: vAttach refused", client.request(
                    "vAttach;%x" % victim_pid), r"^E")
                client.send_packet("R00")  # no reply expected
                client.read_ack()
                c.matches("--no-run: R starts nothing; the session answers",
                          client.request("?"), r"^(W|X|S|T|E|OK)")
                c.true("--no-run: no program started", not re.search(
                    r"Process .* created", server.stderr), server.stderr)
            result = run_gdb(["run", "attach %d" % victim_pid], basic, None,
                             extra_init=["target extended-remote %s" %
                                         server.address])
            c.true("--no-run: gdb `run` fails",
                   "exited" not in result.of_command("run"), result.transcript())
            c.true("--no-run: gdb `attach` fails", "Attached" not in
                   result.of_command("attach %d" % victim_pid), result.transcript())
        c.true("--no-run: the other program was never touched",
               pid_alive(victim_pid), "pid %d" % victim_pid)
    finally:
        victim.stop()
    # Control: the same without --no-run starts the program.
    with Server(kind, [], options=("--multi",)) as server:
        with RspClient.connect(server.port) as client:
            client.handshake()
            client.request("!")
            c.matches("without --no-run: vRun starts the program",
                      client.request("vRun;%s" % hexs(basic)), r"^[TS]05")


def check_no_run_keeps_own_program(kind, c):
    basic = program("basic")
    with Server(kind, [basic], options=("--once", "--no-run")) as server:
        with RspClient.connect(server.port) as client:
            client.handshake()
            client.send_packet("vCont;c")
            client.read_ack()
            c.matches("--no-run: the command line's program runs",
                      client.read_packet(timeout=30), r"^W")
            c.matches("--no-run: no vRun after the exit either",
                      client.request("vRun;%s" % hexs(basic)), r"^E")
            c.equal("--no-run: ! still answered", "OK", client.request("!"))
            c.matches("--no-run: no vRun in extended mode",
                      client.request("vRun;%s" % hexs(basic)), r"^E")
        c.equal("--no-run: exactly one program created", 1,
                len(re.findall(r"Process .* created", server.stderr)), server.stderr)


def main(args, c):
    kind = args.server
    check_once_closes_listener(kind, c)
    if kind != "btstub":
        print("SKIP warning on 0.0.0.0, --no-vfile, --no-run (btstub options)")
        return
    check_help(server_path(kind), c)
    check_warning(kind, c)
    check_no_vfile(kind, c)
    check_no_run_multi(kind, c)
    check_no_run_keeps_own_program(kind, c)


if __name__ == "__main__":
    run_test("test_exposure", main)
