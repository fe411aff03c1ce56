#!/usr/bin/env python3
"""The environment a launched program gets, and btstub's own.

btstub starts itself a second time with glibc.malloc.hugetlb=1 and a
top_pad added to GLIBC_TUNABLES for its own heap
(stub/server/malloc_restart.h) and gives back the environment it was
given before it launches anything. Each server is started with a small
fixed environment: without GLIBC_TUNABLES, with the user's own, with an
empty one, with the user's own hugetlb or top_pad setting. The program,
stopped before its first instruction, must hold in /proc/PID/environ
exactly what it holds under gdbserver 13.1 (both start it through
$SHELL, which adds PWD and SHLVL), entry by entry in order. btstub's
own: started again (the settings and the marker in the environment its
second start got), under its own name (`pgrep -x btstub` and `ps` find
it), as one process; not started again where the user chose a hugetlb or
top_pad setting.

    python3 test_program_environment.py [--server gdbserver] [-v]
"""

import os
import re
import select
import signal
import subprocess
import time

from harness import HarnessError, program, run_test, server_path

GIVEN = {"A": "1", "PATH": "/usr/bin:/bin", "SHELL": "/bin/sh", "Z": "x y=z"}
CASES = (
    ("no GLIBC_TUNABLES", None),
    ("the user's GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.tcache_count=5"),
    ("an empty GLIBC_TUNABLES", ""),
    ("the user's own hugetlb", "glibc.malloc.hugetlb=0"),
    ("the user's own top_pad", "glibc.malloc.top_pad=0"),
)


def environ_of(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        return [e.decode("latin-1") for e in f.read().split(b"\0")[:-1]]


def start(kind, tunables):
    """Starts a server of `kind` on the basic program with GIVEN (and
    GLIBC_TUNABLES when not None); returns (server, program pid)."""
    env = dict(GIVEN)
    if tunables is not None:
        env["GLIBC_TUNABLES"] = tunables
    server = subprocess.Popen([server_path(kind), "--once", "127.0.0.1:0", program("basic")], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    err = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([server.stderr], [], [], 0.2)
        if ready:
            chunk = os.read(server.stderr.fileno(), 4096)
            if not chunk:
                break
            err += chunk
        created = re.search(rb"^Process .* created; pid = (\d+)$", err, re.M)
        if created and re.search(rb"^Listening on port \d+$", err, re.M):
            return server, int(created.group(1))
    stop(server)
    raise HarnessError("%s did not start the program; stderr:\n%s" % (kind, err.decode("latin-1")))


def stop(server):
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait(10)


def program_environment(kind, tunables):
    server, pid = start(kind, tunables)
    try:
        return environ_of(pid)
    finally:
        stop(server)


def check_btstub_itself(tunables, c, label):
    server, _ = start("btstub", tunables)
    try:
        own = environ_of(server.pid)
        with open("/proc/%d/comm" % server.pid) as f:
            comm = f.read().strip()
        session = subprocess.run(["ps", "-o", "pid=,comm=", "-s", str(server.pid)],
                                 capture_output=True, text=True).stdout
    finally:
        stop(server)
    servers = [line for line in session.splitlines() if line.split()[1:] == ["btstub"]]
    c.equal("%s: btstub is one process" % label, 1, len(servers), session)
    c.equal("%s: btstub runs under its own name" % label, "btstub", comm)
    chose = tunables is not None and ("glibc.malloc.hugetlb=" in tunables or "glibc.malloc.top_pad=" in tunables)
    setting = [e for e in own if e.startswith("GLIBC_TUNABLES=")]
    if chose:
        c.equal("%s: not started again (the user's setting stands)" % label,
                ["GLIBC_TUNABLES=" + tunables], setting, own)
        c.true("%s: no marker" % label, not any(e.startswith("BTSTUB_GIVEN_") for e in own), own)
        return
    # glibc's loader cuts the variable's bytes at each ':' it reads past,
    # so the value /proc shows is the first tunable: the marker says what
    # btstub was started with.
    c.true("%s: started again, with its marker last" % label,
           bool(own) and own[-1].startswith("BTSTUB_GIVEN_GLIBC_TUNABLES="), own)
    c.true("%s: GLIBC_TUNABLES set for btstub" % label, len(setting) == 1, own)


def main(args, c):
    for label, tunables in CASES:
        env = program_environment(args.server, tunables)
        if args.server == "btstub":
            reference = program_environment("gdbserver", tunables)
            c.equal("%s: the program's environment, entry by entry, is gdbserver's" % label, reference, env)
            check_btstub_itself(tunables, c, label)
        expected = ("GLIBC_TUNABLES=" + tunables) if tunables is not None else None
        got = [e for e in env if e.startswith("GLIBC_TUNABLES=")]
        c.equal("%s: the program's GLIBC_TUNABLES is the one given" % label,
                [expected] if expected is not None else [], got)
        c.true("%s: no marker in the program's environment" % label,
               not any(e.startswith("BTSTUB_GIVEN_") for e in env), env)


if __name__ == "__main__":
    run_test("test_program_environment", main)
