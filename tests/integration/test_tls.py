#!/usr/bin/env python3
"""Thread-local storage (qSymbol, qGetTLSAddr through libthread_db) on
tests/programs/tls_threads.c: a __thread variable of the program
(main_tls), one of a shared library it links (lib_tls) and errno, with
other values in the main thread than in the worker.

  live    one gdb script against gdbserver (the reference) and the server
          under test over TCP: at the worker's first stop, in the worker
          and in the main thread, at MARK set_range, at the worker's second
          stop and at main_stop; normalised transcripts must be identical,
          and the reference must show the values (no TLS error);
  past    btstub --record: the same live stops, then reverse-step twice
          back to MARK set_range and reverse-continue to the first stop
          (two threads, the main one waiting in pthread_join: the worker's
          checkpoints stand for the program); then forward to main_stop,
          where the main thread alone changes its values, and
          reverse-continue from the second main_stop to the first. Each
          past point prints what the live stop there printed, in both
          threads; the second stops' values differ from the first's.

    python3 test_tls.py [--server gdbserver] [-v]
"""

import re
import shlex

from harness import (check_same_transcript, marker_line, program, run_gdb, run_gdb_tcp, run_test,
                     server_path, transcript_lines)

SOURCE = "tls_threads.c"

# What a stop of the worker shows: its values and where they are, then the
# main thread's.
PROBE = ["print main_tls", "print lib_tls", "print errno", "print (int) errno",
         "print &main_tls", "print &lib_tls", "print (int *) &errno",
         "thread 1", "print main_tls", "print lib_tls", "print (int) errno", "print &main_tls", "thread 2"]
# What a stop of the main thread shows once the worker is joined.
MAIN_PROBE = ["print main_tls", "print lib_tls", "print (int) errno"]


def set_range():
    return "break %s:%d" % (SOURCE, marker_line(SOURCE, "set_range"))


def comparable(result):
    """The normalised transcript without the main thread's frame: where the
    worker's breakpoint finds it (still returning from clone3, or already
    waiting in pthread_join's futex) is a matter of timing."""
    lines, skipping = [], False
    for line in transcript_lines(result):
        if line.startswith("(gdb) "):
            skipping = False
        elif skipping:
            continue
        if line.startswith("[Switching to thread 1 "):
            skipping = True
        lines.append(line)
    return lines


def live_commands():
    cmds = ["break worker_stop", set_range(), "continue"] + PROBE
    cmds += ["continue"] + PROBE + ["continue"] + PROBE
    cmds += ["delete", "break main_stop", "continue"] + MAIN_PROBE + ["continue"] + MAIN_PROBE
    return cmds + ["delete", "continue"]


def check_live(args, prog, c):
    runs = {}
    for kind in ("gdbserver", args.server):
        result, _ = run_gdb_tcp(kind, prog, [], live_commands())
        runs[kind] = result
    ref, test = runs["gdbserver"], runs[args.server]
    c.contains("the reference prints the worker's main_tls", ref.of(3), "= 20", ref.transcript())
    c.contains("the reference prints the worker's lib_tls", ref.of(4), "= 200", ref.transcript())
    c.contains("the reference prints the worker's errno", ref.of(6), "= 22", ref.transcript())
    c.contains("the reference prints the main thread's main_tls", ref.of(3 + PROBE.index("thread 1") + 1),
               "= 10", ref.transcript())
    c.contains("the reference reached the exit", ref.of(-1), "exited normally", ref.transcript())
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server,
                          lines=comparable)


class PastScript:
    """Commands of the --record run; each probe's first index by name."""

    def __init__(self):
        self.cmds = []
        self.at = {}

    def add(self, *cmds):
        self.cmds += cmds

    def probe(self, name, probe):
        self.at[name] = (len(self.cmds), len(probe))
        self.cmds += probe

    def outputs(self, result, name):
        """(command, output) of the probe, value history numbers left out."""
        first, count = self.at[name]
        return [(cmd, re.sub(r"^\$\d+ = ", "$N = ", out or "", flags=re.M))
                for cmd, out in result.outputs[first:first + count]]


def past_script():
    p = PastScript()
    p.add("break worker_stop", set_range(), "continue")
    p.probe("first", PROBE)
    p.add("continue")
    p.probe("set_range", PROBE)
    p.add("continue")
    p.probe("second", PROBE)
    p.add("reverse-step", "reverse-step", "frame")
    p.probe("past set_range", PROBE)
    p.add("delete 2", "reverse-continue")
    p.probe("past first", PROBE)
    # Forward through the history to the present, then on to main_stop.
    p.add("delete", "break main_stop", "continue", "continue")
    p.probe("main first", MAIN_PROBE)
    p.add("continue")
    p.probe("main second", MAIN_PROBE)
    p.add("reverse-continue")
    p.probe("past main first", MAIN_PROBE)
    # To the end of the history, to the program's end held for recording
    # (reported as SIGKILL), and out.
    p.add("delete", "continue", "continue", "continue", "continue")
    return p


def check_past(prog, c):
    p = past_script()
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    result = run_gdb(p.cmds, prog, target)
    text = result.transcript()
    c.contains("the live first stop prints main_tls", result.of(p.at["first"][0]), "= 20", text)
    c.contains("the second stop has the new main_tls", result.of(p.at["second"][0]), "= 21", text)
    c.contains("reverse-step twice reaches MARK set_range", result.of(p.at["past set_range"][0] - 1),
               "%d\t" % marker_line(SOURCE, "set_range"), text)
    c.contains("reverse-continue stops at the first stop", result.of(p.at["past first"][0] - 1),
               "worker_stop", text)
    c.contains("reverse-continue stops at the first main_stop", result.of(p.at["past main first"][0] - 1),
               "main_stop", text)
    # The worker runs while the main thread waits in pthread_join (the
    # program waits for that): a copy of the worker stands for the program,
    # and the past is whole in both threads, as after the join.
    for live, past in (("set_range", "past set_range"), ("first", "past first"),
                       ("main first", "past main first")):
        c.equal("%s: the past prints what the live stop printed" % past,
                p.outputs(result, live), p.outputs(result, past), text)
    for first, second in (("first", "second"), ("main first", "main second")):
        c.true("%s and %s differ" % (first, second),
               p.outputs(result, first) != p.outputs(result, second), text)
    c.contains("the program ends", result.of(-1), "exited normally", text)


def main(args, c):
    prog = program("tls_threads")
    check_live(args, prog, c)
    if args.server == "btstub":
        check_past(prog, c)


if __name__ == "__main__":
    run_test("test_tls", main)
