#!/usr/bin/env python3
"""Checkpoint copies keep none of the program's files open.

Each checkpoint is a copy of the program made by a clone, which gets a copy
of the program's file descriptors; they stayed open in every copy for as
long as it lived, so what the program closed was not closed for anyone
else: a child reading a pipe never got its end of file (the program hung in
waitpid), an flock stayed held, a port could not be bound again. A copy
makes none of the program's system calls, so btstub closes all of them in
it right after the clone.

closed_files (O0 and O2) closes a pipe's write end, a locked file and a
listening socket, and checks each from the other side (a child reading
until end of file with a 5 s limit, a second flock, a second bind). Under
`btstub --record` (the translating tracer, and `--trace-stops=int3`, a
checkpoint every 700 branches) it must print what it prints natively
(every step as natively) with checkpoints taken (`monitor record
status`), and the copies alive at the end hold no descriptor. Against
gdbserver (`--server gdbserver`) the same without recording.

    python3 test_copy_files.py [--server gdbserver] [-v]
"""

import os
import re
import subprocess
import tempfile

from harness import GDB_FIND_COPIES, program, run_gdb_tcp, run_test

PROBE = GDB_FIND_COPIES + r'''
copies = checkpoint_copies()
held = 0
for copy in copies:
    try:
        held += len(os.listdir("/proc/%d/fd" % copy))
    except OSError:
        pass
print("PROBE copies %d, descriptors held by them %d" % (len(copies), held))
'''


def main(args, c):
    kind = args.server
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.py")
        with open(probe, "w") as f:
            f.write(PROBE)
        for opt in ("O0", "O2"):
            prog = program("closed_files", opt)
            lock = os.path.join(tmp, "lock-" + opt)
            native = subprocess.run([prog, lock], capture_output=True, text=True, timeout=60)
            c.equal("%s: native run" % opt, 0, native.returncode, native.stdout)
            setups = [("--record", ("--once", "--record")),
                      ("--record --trace-stops=int3", ("--once", "--record", "--trace-stops=int3"))]
            if kind != "btstub":
                setups = [("plain", ("--once",))]
            for label, options in setups:
                ctx_label = "%s %s" % (opt, label)
                commands = ["break _exit", "continue", "source " + probe, "continue"]
                if kind == "btstub":
                    commands[2:2] = ["monitor record status"]
                result, server = run_gdb_tcp(kind, prog, [lock], commands, options=options, timeout=120)
                ctx = result.transcript() + "\n--- server stdout ---\n" + server.stdout + \
                    "\n--- server stderr ---\n" + server.stderr
                c.matches("%s: the program ran to its _exit" % ctx_label, result.of(1),
                          r"(?m)^Breakpoint 1(\.\d+)?, .*_exit", ctx)
                printed = [line for line in server.stdout.splitlines()
                           if re.match(r"^(pipe|flock|port): ", line)]
                c.equal("%s: what the program printed" % ctx_label, native.stdout.splitlines(), printed, ctx)
                if kind == "btstub":
                    m = re.search(r"(\d+) taken in all", result.of(2))
                    c.true("%s: checkpoints were taken" % ctx_label, m is not None and int(m.group(1)) > 0, ctx)
                m = re.search(r"PROBE copies (\d+), descriptors held by them (\d+)", result.output)
                c.true("%s: the copies hold no descriptor" % ctx_label, m is not None and m.group(2) == "0", ctx)
                if kind == "btstub":
                    c.true("%s: copies alive at the end" % ctx_label, m is not None and int(m.group(1)) > 0, ctx)


if __name__ == "__main__":
    run_test("test_copy_files", main)
