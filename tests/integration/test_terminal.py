#!/usr/bin/env python3
"""The program a server launches owns the server's terminal while it is
debugged, as under gdbserver.

gdbserver (gdbserver/fork-child.cc, post_fork_inferior) makes each program
it launches the foreground process group of its terminal (the one on its
stderr) and gives the terminal back to its first owner when it exits
(atexit). So a program that changes its terminal's settings (tcsetattr)
just does so; in a background group it would be stopped by SIGTTOU.

The server runs on a pseudo-terminal whose session leader is a small
wrapper (standing in for the user's shell: the terminal's foreground group
at first, the server in its group); gdb, over TCP, continues
tests/programs/tty_settings.c to its end. Compared between gdbserver (the
reference) and the server under test: gdb's transcript, the program's own
output on the terminal, and whether the terminal is the wrapper's again
once the server has exited.

    python3 test_terminal.py [--server gdbserver] [-v]
"""

import re
import sys

import harness
from harness import check_same_transcript, program, run_gdb, run_test, server_path
from pty_gdb import PtyChild

# The user's shell: runs the server in its own group, in the foreground, and
# says afterwards whether the terminal is its own again.
WRAPPER = (
    "import os, subprocess, sys\n"
    "status = subprocess.call(sys.argv[1:])\n"
    "print('wrapper: server exit status %d; terminal %s' % (status, "
    "'back' if os.tcgetpgrp(0) == os.getpgrp() else 'not back'), flush=True)\n")

COMMANDS = ["continue"]
PROGRAM_LINE = re.compile(r"^(tcgetattr|tcsetattr|foreground): .*$", re.M)


def run(kind, prog):
    argv = [sys.executable, "-c", WRAPPER, server_path(kind), "--once",
            "127.0.0.1:0", prog]
    with PtyChild(argv) as tty:
        port = int(tty.expect(r"^Listening on port (\d+)$").group(1))
        result = run_gdb(COMMANDS, prog, "127.0.0.1:%d" % port)
        verdict = tty.expect(r"^wrapper: server exit status (-?\d+); "
                             r"terminal (back|not back)$", 30)
        program_lines = [m.group(0) for m in PROGRAM_LINE.finditer(tty.log)]
        if harness.VERBOSE:
            print(result.transcript())
            print("--- terminal ---\n" + tty.log)
        return result, program_lines, verdict.group(0), tty.log


def main(args, c):
    prog = program("tty_settings")
    ref, ref_output, ref_verdict, ref_log = run("gdbserver", prog)
    test, test_output, test_verdict, test_log = run(args.server, prog)
    c.contains("reference: the program runs to its end under gdbserver",
               ref.of_command("continue"), "exited normally",
               ref.transcript() + ref_log)
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server)
    c.equal("same program output on the terminal as under gdbserver",
            "\n".join(ref_output), "\n".join(test_output), test_log)
    c.equal("the terminal is given back as by gdbserver", ref_verdict,
            test_verdict, test_log)


if __name__ == "__main__":
    run_test("test_terminal", main)
