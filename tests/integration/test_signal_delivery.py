#!/usr/bin/env python3
"""Signals the program gets while it is debugged reach it as they would
under gdbserver: with their own siginfo, past a step gdb is taking, and
on detach (tests/programs/siginfo_signals.c prints what its SA_SIGINFO
handlers saw: sender, si_code, sigqueue value).

Every scenario runs under gdbserver, btstub and btstub --no-step-ahead;
gdb's transcript and the program's output must be gdbserver's.

1. siginfo: SIGUSR1 the program queues to itself (value 42) reported and
   continued, passed without stopping (`handle SIGUSR1 nostop noprint
   pass`), or replaced by gdb's `signal SIGUSR2` (then the kernel makes
   the debug server its sender); SIGUSR1 sent from outside between steps
   and continued.
2. A step that meets a passed signal (SIGUSR1 sent from outside between
   two steps, `handle SIGUSR1 nostop noprint pass`): `stepi` and `next`
   end past the handler, which has run (gdb steps over it).
3. A reported SIGUSR1, then `stepi` into its handler (the kernel stops
   the thread at the handler's first instruction), then gdb's `signal
   SIGUSR2`: given at that stop the signal is dropped by the kernel, under
   gdbserver as under btstub (a step run ahead from there must not change
   that).
4. A reported SIGUSR1, then `detach`: the program gets the signal (gdb
   passes SIGUSR1).
5. SIGUSR1 sent to both threads of the program at once (`threads`): one
   stop is reported, the other kept; gdb's next `continue` passes the
   first thread's signal while the kept one is reported: the first thread
   gets it with its own siginfo and no further stop.
6. SIGTRAP sent to both threads at once: the kept one is reported when
   gdb calls a function in its thread (`print probe()`), although the
   call moved the thread's pc: a sent SIGTRAP is no breakpoint stop that
   a pc change voids.
7. Non-stop (`set non-stop on`): the worker stops with a SIGUSR1 while
   main runs on, then `detach`: the worker gets its signal (gdbserver
   gives each stopped thread its own last stop's signal; btstub gave
   only the stop reported last, which main's resume had cleared).

    python3 test_signal_delivery.py [--server gdbserver] [-v]
"""

import re

import harness
from harness import (Server, normalise, pid_alive, program, run_gdb, run_test, unified_diff, wait_until)

SEND_USR1 = "python import os, signal; os.kill(gdb.selected_inferior().pid, signal.SIGUSR1)"
SEND_USR1_TO_EACH_THREAD = ("python import ctypes, signal; libc = ctypes.CDLL(None); "
                            "[libc.syscall(234, t.ptid[0], t.ptid[1], signal.SIGUSR1) "
                            "for t in gdb.selected_inferior().threads()]")  # 234: tgkill
SWITCH_TO_OTHER_THREAD = ('python gdb.execute("thread %d" % [t.num for t in gdb.selected_inferior().threads() '
                          'if t != gdb.selected_thread()][0])')
# Stopped in spin's loop; SIGUSR1 (pending as soon as kill returns) waits
# for the next resume.
SEND_BETWEEN_STEPS = ["break spin", "continue", "delete", "stepi 12", SEND_USR1]

SCENARIOS = [
    ("queued SIGUSR1 reported and continued", ["queue"], ["continue", "continue"]),
    ("queued SIGUSR1 passed", ["queue"], ["handle SIGUSR1 nostop noprint pass", "continue"]),
    ("queued SIGUSR1 replaced by gdb's signal", ["queue"], ["continue", "signal SIGUSR2"]),
    ("SIGUSR1 from outside continued", [], SEND_BETWEEN_STEPS + ["continue", "continue"]),
    ("a stepi meets a passed signal", [],
     ["handle SIGUSR1 nostop noprint pass"] + SEND_BETWEEN_STEPS + ["stepi", "print $pc", "print $_siginfo.si_signo",
                                                                    "stepi", "print $pc", "continue"]),
    ("a next meets a passed signal", [],
     ["handle SIGUSR1 nostop noprint pass"] + SEND_BETWEEN_STEPS + ["next", "print $pc", "continue"]),
    ("gdb's signal at a step into a handler", [],
     SEND_BETWEEN_STEPS + ["stepi", "stepi", "print $pc", "print $_siginfo.si_code", "signal SIGUSR2"]),
    ("detach after a reported SIGUSR1", [], SEND_BETWEEN_STEPS + ["stepi", "detach"]),
    # Both threads meet a SIGUSR1 at once: one is reported, the other kept
    # for the next `continue`, which passes the first thread's signal.
    ("SIGUSR1 to two threads, continued", ["threads"],
     ["break spin", "continue", "delete", SEND_USR1_TO_EACH_THREAD, "continue", "continue", "continue"]),
    # Both threads meet a SIGTRAP at once; gdb then calls a function in
    # the thread whose SIGTRAP was kept, which moves its pc: the SIGTRAP is
    # still the program's and stops the call.
    ("SIGTRAP to two threads, then a call in the kept one", ["threads"],
     ["set unwindonsignal on", "break spin", "continue", "delete",
      SEND_USR1_TO_EACH_THREAD.replace("SIGUSR1", "SIGTRAP"), "continue", SWITCH_TO_OTHER_THREAD, "print probe()",
      "continue"]),
]
# Which thread's signal is reported first is the kernel's choice: the
# outputs of these commands are compared as one set of lines, thread
# numbers aside.
UNORDERED = {"SIGUSR1 to two threads, continued": (4, 5),
             "SIGTRAP to two threads, then a call in the kept one": (5, 6)}


def run(kind, args, commands, options, extra_init=()):
    """gdb's transcript and the program's output; the program (detached, or
    not) has ended before the server's session is cleaned up."""
    prog = program("siginfo_signals")
    server = Server(kind, [prog] + args, options=options)
    try:
        result = run_gdb(commands, prog, server.address, extra_init=extra_init)
        server.wait_exit(10)
        pid = server.inferior_pid
        if pid is not None:
            wait_until(lambda: not pid_alive(pid), 10)
    finally:
        server.stop()
    return result, server


def transcript_lines(result, unordered=()):
    # The frame of a stop inside sigqueue names the program's pid.
    def tidy(text):
        text = re.sub(r"\bpid=\d+", "pid=PID", text)
        if unordered:
            text = re.sub(r"^Thread \d+ ", "Thread N ", text, flags=re.M)
            text = re.sub(r"^#0  ", "", text, flags=re.M)
        return normalise(text)

    lines = tidy(result.preamble) + ["exit status: %s" % result.status]
    pooled = []
    for index, (command, output) in enumerate(result.outputs):
        lines.append("(gdb) " + command)
        out = tidy(output if output is not None else "<not reached>")
        if index in unordered:
            pooled += [line for line in out if not line.startswith("[Switching to ")]
            if index == unordered[-1]:
                lines += sorted(pooled)
        else:
            lines += out
    return lines


def main(args, c):
    runs = [("gdbserver", ("--once",)), (args.server, ("--once",))]
    if args.server != "gdbserver":
        runs.append((args.server, ("--once", "--no-step-ahead")))
    for name, prog_args, commands in SCENARIOS:
        outputs = []
        for kind, options in runs:
            result, server = run(kind, prog_args, commands, options)
            if harness.VERBOSE:
                print(result.transcript())
                print(server.stdout)
            outputs.append((kind + " " + " ".join(options), result, server))
        ref_name, ref, ref_server = outputs[0]
        c.contains("%s: the reference program printed its report" % name, ref_server.stdout, "usr2: ",
                   ref.transcript() + ref_server.stdout)
        ref_lines = transcript_lines(ref, UNORDERED.get(name, ()))
        for run_name, result, server in outputs[1:]:
            lines = transcript_lines(result, UNORDERED.get(name, ()))
            c.true("%s: transcript of %s is gdbserver's" % (name, run_name), lines == ref_lines,
                   unified_diff(ref_lines, lines, ref_name, run_name))
            c.equal("%s: program output of %s is gdbserver's" % (name, run_name), ref_server.stdout, server.stdout)
    check_non_stop_detach(args, c)


SEND_TO_THREAD = ("python import ctypes, signal; libc = ctypes.CDLL(None); "
                  "t = [t for t in gdb.selected_inferior().threads() if t.num == %d][0]; "
                  "libc.syscall(234, t.ptid[0], t.ptid[1], signal.%s)")  # 234: tgkill
# The worker stops with SIGUSR1; main, continued with a SIGUSR2 pending,
# stops with it at once: both stand with a signal, main's reported last.
NON_STOP_DETACH = ["break spin", "continue", "delete", SEND_TO_THREAD % (2, "SIGUSR1"), "shell sleep 0.5",
                   SEND_TO_THREAD % (1, "SIGUSR2"), "continue", "shell sleep 0.5", "info threads", "detach",
                   "shell sleep 1"]


def check_non_stop_detach(args, c):
    outputs = {}
    for kind in ("gdbserver", args.server):
        result, server = run(kind, ["threads"], NON_STOP_DETACH, ("--once",), extra_init=["set non-stop on"])
        outputs[kind] = (result, server.stdout)
    result, stdout = outputs[args.server]
    ctx = result.transcript() + "\nprogram output:\n" + stdout
    c.contains("non-stop detach: the worker's SIGUSR1 was reported", result.output,
               'Thread 2 "siginfo_signals" received signal SIGUSR1', ctx)
    c.contains("non-stop detach: the worker got its SIGUSR1", stdout, "worker usr1: count=1 ", ctx)
    c.equal("non-stop detach: program output is gdbserver's", outputs["gdbserver"][1], stdout)


if __name__ == "__main__":
    run_test("test_signal_delivery", main)
