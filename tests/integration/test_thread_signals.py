#!/usr/bin/env python3
"""Signals in a multi-threaded program (tests/programs/signals_mt.c), one gdb
script run against gdbserver (the reference) and the server under test;
normalised transcripts must be identical:

- `handle SIGUSR1 nostop noprint pass` while 30 SIGUSR1s reach the workers
  (all handled: the program counts them) and while worker 1 keeps sending
  itself SIGUSR1 during `next` in main (a signal arriving while another
  thread single-steps; the steps land on the same lines as with gdbserver,
  and no all-stop SIGSTOP of btstub's ever shows as "received signal
  SIGSTOP");
- a SIGUSR2 queued to worker 2 stops it, and $_siginfo (qXfer:siginfo)
  shows signo, code SI_QUEUE and the queued value;
- `signal SIGINT` at a breakpoint: the program's handler runs once.
Program output and exit code must match too.

The noise (program argument "noisy") is on by default: it once exposed an
all-stop bug (a second SIGSTOP sent to a thread that still owed one was
reported to gdb). `--quiet` runs the program without it.

    python3 test_thread_signals.py [--server gdbserver] [-v] [--quiet]
"""

import re
import sys

from harness import check_same_transcript, program, run_gdb_tcp, run_test, transcript_lines

COMMANDS = [
    "handle SIGUSR1 nostop noprint pass",
    "break stepper",
    "continue",
    "next",
    "next",
    "next",
    "next",
    "next",
    "print v",
    "continue",
    "print $_siginfo.si_signo",
    "print $_siginfo.si_code",
    "print $_siginfo._sifields._rt.si_sigval.sival_int",
    "break before_sigint",
    "continue",
    "signal SIGINT",
    "delete",
    "continue",
]


# Where worker 2 sat when SIGUSR2 came (inside usleep, almost always) is
# timing, not the server's doing.
FRAME_DETAIL = re.compile(r"^0x[0-9a-f]+ in |^\d+\t.*: No such file or directory")


NOISY = True


def comparable(result):
    return [line for line in transcript_lines(result)
            if not FRAME_DETAIL.search(line)]


def main(args, c):
    prog = program("signals_mt")
    program_args = ["noisy"] if NOISY else []
    runs = {}
    for kind in ("gdbserver", args.server):
        result, server = run_gdb_tcp(kind, prog, program_args, COMMANDS)
        runs[kind] = (result, server)
    ref, ref_server = runs["gdbserver"]
    test, test_server = runs[args.server]
    c.contains("reference run reached the exit", ref.of(-1),
               "exited normally", ref.transcript())
    c.contains("SIGUSR2 stop in worker 2", test.of(9),
               'Thread 3 "signals_mt_O0" received signal SIGUSR2',
               test.transcript())
    c.value("siginfo value", test.of(12), "1234")
    # `signal SIGINT` at a breakpoint: the handler returns onto it.
    c.contains("signal SIGINT ran the handler, back at the breakpoint",
               test.of(15), "hit Breakpoint 2, before_sigint", test.transcript())
    c.true("no all-stop SIGSTOP reported to gdb",
           "SIGSTOP" not in test.transcript(), test.transcript())
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server,
                          lines=comparable)
    c.equal("program output", "usr1 30\nstepper 9\nusr2 1234\nsigint 1\n",
            test_server.stdout)
    c.equal("same program output as under gdbserver", ref_server.stdout,
            test_server.stdout)


if __name__ == "__main__":
    if "--quiet" in sys.argv:
        NOISY = False
        sys.argv.remove("--quiet")
    if "--noisy" in sys.argv:  # the default; accepted for old command lines
        sys.argv.remove("--noisy")
    run_test("test_thread_signals", main)
