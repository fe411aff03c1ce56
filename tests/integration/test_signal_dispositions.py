#!/usr/bin/env python3
"""The program inherits the signal dispositions the server inherited.

An ignored signal stays ignored across fork and exec. gdbserver hands on
to the program what it was started with: under gdb's `target remote |`
SIGPIPE is ignored (gdb ignores it), and a shell's `trap ''` or `nohup`
ignores others. btstub ignores SIGPIPE (and, owning a terminal, SIGTTOU
and SIGTTIN) for itself, and used to set SIGPIPE, SIGINT, SIGCHLD,
SIGTERM, SIGTTOU and SIGTTIN back to default in the program whatever it
had inherited: a program detached after `target remote |` then died of
SIGPIPE at its next write to the gone pipe, where under gdbserver the
write fails with EPIPE.

The program is grep reading its own "SigIgn:" line from
/proc/self/status. Each server runs it:

1. over gdb's pipe, started by `bash -c "trap '' INT TERM; exec SERVER -
   grep ..."`: SIGINT, SIGTERM and SIGPIPE are ignored;
2. over TCP, started by the harness (Python starts it with SIGPIPE at
   default): btstub's own SIGPIPE ignoring must not reach the program;

and btstub's line must equal gdbserver's in both.

    python3 test_signal_dispositions.py [-v]
"""

import re
import shlex

from harness import run_gdb, run_gdb_tcp, run_test, server_path

GREP = "/bin/grep"
ARGS = ["^SigIgn", "/proc/self/status"]
SIGINT, SIGPIPE, SIGTERM = 2, 13, 15


def ignored(text):
    m = re.search(r"SigIgn:\s*([0-9a-f]+)", text)
    return int(m.group(1), 16) if m else None


def names(mask):
    return [sig for sig in range(1, 65) if mask is not None and mask & (1 << (sig - 1))]


def over_pipe(kind):
    server = " ".join(shlex.quote(a) for a in [server_path(kind), "-", GREP] + ARGS)
    target = "| bash -c %s" % shlex.quote("trap '' INT TERM; exec " + server)
    result = run_gdb(["continue"], GREP, target, markers=False)
    return result.output


def over_tcp(kind):
    result, server = run_gdb_tcp(kind, GREP, ARGS, ["continue"])
    return result.transcript() + "\n" + server.stdout + server.stderr


def main(args, c):
    piped = {kind: over_pipe(kind) for kind in ("gdbserver", args.server)}
    ref, got = ignored(piped["gdbserver"]), ignored(piped[args.server])
    c.true("over the pipe, under gdbserver the program ignores SIGINT, SIGTERM and SIGPIPE",
           ref is not None and {SIGINT, SIGPIPE, SIGTERM} <= set(names(ref)), piped["gdbserver"])
    c.equal("over the pipe, %s hands on the same ignored signals as gdbserver" % args.server,
            names(ref), names(got), piped[args.server])
    tcp = {kind: over_tcp(kind) for kind in ("gdbserver", args.server)}
    ref, got = ignored(tcp["gdbserver"]), ignored(tcp[args.server])
    c.true("over TCP, under gdbserver the program's SIGPIPE is at default",
           ref is not None and SIGPIPE not in names(ref), tcp["gdbserver"])
    c.equal("over TCP, %s hands on the same ignored signals as gdbserver (not its own SIGPIPE)" % args.server,
            names(ref), names(got), tcp[args.server])


if __name__ == "__main__":
    run_test("test_signal_dispositions", main)
