#!/usr/bin/env python3
"""A checkpoint the program's seccomp filter refuses leaves the program as
it was.

Each checkpoint is a clone(CLONE_PARENT) btstub makes the program run at
its pc (two bytes borrowed for the `syscall`). no_clone_copies.c installs
a filter that refuses exactly that clone, with EPERM (`errno`, a sandbox's
deny rule), a trap (`trap`: SIGSYS) or the program's end (`kill`:
SECCOMP_RET_KILL_PROCESS), then works across system calls (where the
tracer wants a checkpoint after each) and prints a checksum. Under
`btstub --once --record`, at -O0 and -O2, to its end: the program prints
what it prints natively and exits with status 0, and never gets a SIGSYS.
Before this, a clone that made no clone event let the continued thread
run on into the program's code with btstub's registers: the program ended
without printing its checksum; and a filter that kills on the clone ended
the program at the first checkpoint (btstub now reads the filters first).

A btstub that cannot read the filters (run without CAP_SYS_ADMIN, here by
setpriv) makes the clone as before, and `kill` ends the program in the
middle of a copy, as a SIGKILL from outside would, made certain: reported
as the end it is (X, SIGSYS), and btstub stays sound. Before this, the
copy handled that end on the spot, which freed the thread's state under
the stop whose tracer took the copy (a heap-use-after-free under ASan,
seen in CI's test_lifecycle_faults as a SIGKILL from outside).

Runs against btstub only (gdbserver has no --record).

    python3 test_copy_clone_refused.py [-v]
"""

import re
import subprocess

from harness import Server, program, run_test, server_path
from rsp_client import RspClient
from translate_compare import TIMEOUT, stop_signal


def capability_effective(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^CapEff:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)


def check_end_during_copy(c, label, prog):
    argv = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin",
            server_path("btstub"), "--once", "--record", "127.0.0.1:0", prog, "kill"]
    with Server("btstub", [], argv=argv) as server:
        c.equal("%s: btstub runs without CAP_SYS_ADMIN" % label, 0, capability_effective(server.proc.pid) >> 21 & 1)
        with RspClient.connect(server.port, timeout=TIMEOUT) as client:
            client.handshake(features="multiprocess+;swbreak+;hwbreak+;vContSupported+")
            first = client.request("vCont;c", timeout=TIMEOUT)
        # gdb's number for SIGSYS is 12.
        c.matches("%s: the end in the copy's clone is reported as the program's (SIGSYS)" % label,
                  first, r"^X0c(;|$)", server.stderr[-2000:])
        try:
            status = server.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            status = None
        c.equal("%s: btstub ends with its --once client, unharmed" % label, 0, status, server.stderr[-2000:])


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        prog = program("no_clone_copies", opt)
        for mode in ("errno", "trap", "kill"):
            label = "%s %s" % (opt, mode)
            native = subprocess.run([prog, mode], capture_output=True, text=True, timeout=60)
            c.equal("%s: runs natively" % label, 0, native.returncode, native.stderr)
            if mode == "kill":
                check_end_during_copy(c, label + ", filters unread", prog)
            with Server("btstub", [prog, mode], options=("--once", "--record")) as server, \
                    RspClient.connect(server.port, timeout=TIMEOUT) as client:
                client.handshake(features="multiprocess+;swbreak+;hwbreak+;vContSupported+")
                # To the stop before the exit, the held end (SIGKILL), the end.
                stops = [client.request("vCont;c", timeout=TIMEOUT)]
                while len(stops) < 6 and stops[-1][:1] == "T":
                    sig = stop_signal(stops[-1])
                    stops.append(client.request("vCont;c" if sig == 0 else "vCont;C%02x" % sig, timeout=TIMEOUT))
                ctx = "stops: %s\nbtstub stderr:\n%s" % (stops, server.stderr[-2000:])
                c.equal("%s: stops before the exit, holds the end, then the program exits 0" % label,
                        [0, 9, "W00"], [stop_signal(s) for s in stops[:-1]] + [stops[-1][:3]], ctx)
                # The program's output reaches us through btstub's stdout,
                # read by a thread of the harness: possibly after the W.
                server.wait_stdout(r"^sum ", 10.0)
                c.equal("%s: the program prints what it prints natively" % label, native.stdout.strip(),
                        server.stdout.strip(), ctx)


if __name__ == "__main__":
    run_test("test_copy_clone_refused", main)
