#!/usr/bin/env python3
"""The server's command line and connection life cycle, mostly without gdb
(a tiny RSP client stands in for it where a connection is needed):

--help / --version; a missing or non-executable program, a busy port, a bad
--attach PID and an unknown option each give a clear message and a non-zero
exit; `:0` picks a free port and says which ("Listening on port N");
"Process PROG created; pid = N" names a traced, live process; the client's
address is reported; --once exits after the client disconnects (and the
launched program is killed); without --once the server accepts a second
connection, with the program the first left stopped; `monitor exit` ends
the server.

    python3 test_cli.py [--server gdbserver] [-v]
"""

import os
import re
import shutil
import socket
import tempfile
import time

from harness import (Server, free_port, pid_alive, program, run_command, run_gdb, run_test, server_path, tracer_of, wait_until)


def rsp_request(sock, payload, timeout=5.0):
    """Sends one RSP packet, returns the reply payload (acks skipped)."""
    data = payload.encode()
    sock.sendall(b"$%s#%02x" % (data, sum(data) & 0xFF))
    sock.settimeout(timeout)
    buf = b""
    while True:
        m = re.search(rb"\$([^#]*)#[0-9a-fA-F]{2}", buf)
        if m:
            sock.sendall(b"+")
            return m.group(1).decode("latin-1")
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("server closed the connection; got %r" % buf)
        buf += chunk


def connect_and_query(port):
    """Connects, asks for the stop reason, disconnects; returns the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        return rsp_request(sock, "?")


def check_help_version(path, kind, c):
    status, out, err = run_command([path, "--help"], 10)
    c.equal("--help exits 0", 0, status, err)
    c.matches("--help prints usage on stdout", out, r"(?i)usage:")
    c.contains("--help mentions --attach", out, "--attach")
    c.contains("--help mentions --once", out, "--once")
    status, out, err = run_command([path, "--version"], 10)
    c.equal("--version exits 0", 0, status, err)
    c.matches("--version names the program", out, r"(?i)\b%s\b" % kind)


def check_bad_command_lines(path, c):
    status, out, err = run_command([path, "--once", "127.0.0.1:0",
                                    "/no/such/program"], 15)
    c.true("missing program: non-zero exit", status not in (0, None),
           "status %r" % status)
    c.contains("missing program: names the program", err, "/no/such/program")
    # The shell says why: bash "No such file or directory", dash "not found".
    c.matches("missing program: says why", err, r"No such file or directory|not found")
    c.not_contains("missing program: does not listen", err, "Listening on port")

    status, out, err = run_command([path, "--once", "127.0.0.1:0",
                                    "/etc/passwd"], 15)
    c.true("non-executable program: non-zero exit", status not in (0, None),
           "status %r" % status)
    c.contains("non-executable program: says why", err, "Permission denied")

    status, out, err = run_command([path, "--attach", "127.0.0.1:0",
                                    "999999999"], 15)
    c.true("attach to a missing pid: non-zero exit", status not in (0, None),
           "status %r" % status)
    c.contains("attach to a missing pid: names the pid", err, "999999999")
    status, out, err = run_command([path, "--attach", "127.0.0.1:0",
                                    "notapid"], 15)
    c.true("attach to a non-numeric pid: non-zero exit",
           status not in (0, None), "status %r" % status)
    c.true("attach to a non-numeric pid: says something on stderr",
           err.strip(), "stderr empty")

    status, out, err = run_command([path, "--no-such-option", "127.0.0.1:0",
                                    program("basic")], 15)
    c.true("unknown option: non-zero exit", status not in (0, None),
           "status %r" % status)
    c.contains("unknown option: named", err, "--no-such-option")


def check_gdbserver_words(path, c):
    """What gdb's gdb.server tests wait for, the same from both servers:
    usage errors exit 1; a host that does not resolve is "COMM: cannot
    resolve name: ..." (server-connect.exp's tcp8:123 and garbage:1234;
    the suite waits for those words, else for its 120 s timeout); a bare
    program name that is a file in the current directory runs that file,
    named by its absolute path (abspath.exp); --selftest says there are
    no built-in self tests (unittest.exp: UNSUPPORTED)."""
    for argv, what in (([], "no arguments"), (["--frobnicate", "127.0.0.1:0", program("basic")], "--frobnicate")):
        status, out, err = run_command([path] + argv, 15)
        c.equal("usage error (%s): exit status 1, as gdbserver" % what, 1, status, err)
    for comm in ("tcp8:123", "garbage:1234"):
        status, out, err = run_command([path, "--once", comm, program("basic")], 30)
        c.equal("%s: exit status 1" % comm, 1, status, err)
        c.matches("%s: gdbserver's words" % comm, err, r"^%s: cannot resolve name: .+$" % re.escape(comm))
        c.not_contains("%s: does not listen" % comm, err, "Listening on port")
    status, out, err = run_command([path, "--selftest"], 10)
    c.equal("--selftest: exit status 0", 0, status, err)
    c.equal("--selftest: a build without self tests, in gdbserver's words",
            "Selftests have been disabled for this build.\n", out, err)
    with tempfile.TemporaryDirectory() as cwd:
        local = os.path.join(cwd, "abspath")
        shutil.copy(program("basic"), local)
        status, out, err = run_command([path, "--once", "127.0.0.1:0", "abspath"], 10, cwd=cwd)
        c.contains("a bare program name in the current directory runs that file", err,
                   "Process %s created; pid = " % local)


def check_busy_port(path, c):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status, out, err = run_command(
            [path, "--once", "127.0.0.1:%d" % port, program("spin"), "30"], 15)
    c.true("busy port: non-zero exit", status not in (0, None),
           "status %r" % status)
    c.contains("busy port: message", err,
               "Can't bind address: Address already in use.")
    created = re.search(r"^Process .* created; pid = (\d+)$", err, re.M)
    if created:
        pid = int(created.group(1))
        c.true("busy port: no program left running",
               wait_until(lambda: not pid_alive(pid), 5), "pid %d alive" % pid)


def check_startup_lines(kind, c):
    prog = program("spin")
    with Server(kind, [prog, "30"]) as server:
        c.true(":0 picks a port", server.port and server.port > 0,
               server.stderr)
        c.matches("Process PROG created line", server.stderr,
                  r"^Process %s created; pid = \d+$" % re.escape(prog))
        pid = server.inferior_pid or -1
        c.true("created process is alive", pid_alive(pid), server.stderr)
        c.equal("created process is traced by the server", server.proc.pid,
                tracer_of(pid))
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
        except OSError as e:
            exe = str(e)
        c.equal("created process runs the program", prog, exe)
        reply = connect_and_query(server.port)
        c.matches("answers a stop-reason query", reply, r"^[TS][0-9a-f]{2}")
        c.true("client address reported", server.wait_stderr(
            r"^Remote debugging from host 127\.0\.0\.1, port \d+$"),
            server.stderr)
        c.equal("--once: server exits after the client disconnects", 0,
                server.wait_exit(10), server.stderr)
        c.true("--once: launched program killed on disconnect",
               wait_until(lambda: not pid_alive(pid), 5), "pid %d alive" % pid)


def check_reconnect(kind, c):
    prog = program("spin")
    with Server(kind, [prog, "30"], options=()) as server:
        pid = server.inferior_pid or -1
        first = connect_and_query(server.port)
        c.matches("without --once: first connection answered", first,
                  r"^[TS][0-9a-f]{2}")
        time.sleep(0.3)
        c.true("without --once: server still running after disconnect",
               server.proc.poll() is None, server.stderr)
        try:
            second = connect_and_query(server.port)
        except OSError as e:
            second = "connection failed: %s" % e
        # The reply depends on what is left to debug; any packet will do.
        c.matches("without --once: second connection answered", second,
                  r"^[A-Za-z0-9]")
        # The client left the program stopped: the next one gets it, as
        # from gdbserver (test_reconnect has the details).
        c.true("without --once: the program is kept for the next client",
               pid_alive(pid) and tracer_of(pid) == server.proc.pid,
               server.stderr)
        c.true("without --once: server still running", server.proc.poll() is None,
               server.stderr)


def check_monitor_exit(kind, c):
    prog = program("spin")
    with Server(kind, [prog, "30"], options=()) as server:
        pid = server.inferior_pid or -1
        result = run_gdb(["monitor exit"], prog, server.address, timeout=30)
        c.true("monitor exit: server exits", server.wait_exit(10) is not None,
               result.transcript() + server.stderr)
        # gdb itself may say the connection went: not the server's words.
        c.equal("monitor exit: prints nothing (gdbserver's tests expect nothing)", "",
                re.sub(r"Remote communication error\..*|Remote connection closed", "", result.of(0)).strip(), result.transcript())
        c.true("monitor exit: program gone",
               wait_until(lambda: not pid_alive(pid), 5), "pid %d alive" % pid)


def check_bare_port_is_local(kind, c):
    if kind != "btstub":
        # gdbserver listens on every address for a bare :PORT.
        print("SKIP bare :PORT listens on 127.0.0.1 only (btstub rule)")
        return
    port = free_port()
    with Server(kind, [program("spin"), "30"], comm=":%d" % port) as server:
        with open("/proc/net/tcp") as f:
            table = f.read()
        listen = re.findall(r"^\s*\d+: ([0-9A-F]{8}):%04X [0-9A-F]{8}:0000 0A" %
                            server.port, table, re.M)
        c.equal("bare :PORT listens on 127.0.0.1 only", ["0100007F"], listen,
                table)


def main(args, c):
    path = server_path(args.server)
    check_help_version(path, args.server, c)
    check_bad_command_lines(path, c)
    check_gdbserver_words(path, c)
    check_busy_port(path, c)
    check_startup_lines(args.server, c)
    check_reconnect(args.server, c)
    check_monitor_exit(args.server, c)
    check_bare_port_is_local(args.server, c)


if __name__ == "__main__":
    run_test("test_cli", main)
