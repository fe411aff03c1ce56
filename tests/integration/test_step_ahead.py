#!/usr/bin/env python3
"""btstub runs a program's next single step while gdb still works on the
last one, and undoes it when gdb asks for something else
(stub/session/step_ahead.h). Nothing of this may show:

1. Stepping through step_loop on tests/programs/stepper.c, gdb's transcript
   is the one gdbserver gives, and the one btstub gives with
   --no-step-ahead. The script stops on instructions that write the
   variables it prints (`add %rax,-0x8(%rbp)` writes `a`) before stepping
   them, changes a variable and the pc between steps, inserts breakpoints
   between steps, and continues to the exit.
2. A program killed from outside between two steps, usr_signals.c sent
   SIGUSR1 from outside between two steps (reported, or passed and then
   followed by gdb's `signal SIGUSR2`), and segv_steps.c stepped through
   reads that fault and that its SIGSEGV handler recovers from, gdb
   passing SIGSEGV: transcript and program output are gdbserver's, with
   and without --no-step-ahead (a step that meets a passed signal ends
   past the handler, as gdb steps over it).
3. tests/programs/alarm_steps.c is stepped 2,500 times while an interval
   timer sends SIGALRM every 5 ms (passed to the program without
   stopping): the alarms reach it while it is stepped (at least 10), and
   it finds its signal mask its own again at the end.

    python3 test_step_ahead.py [--server gdbserver] [-v]
"""

import harness
from harness import normalise, program, run_gdb_tcp, run_test, unified_diff

STEPPING = [
    "break step_loop",
    "continue",
    "stepi 17",
    "x/i $pc",
    "print a",
    "print i",
    # The next instruction is `add %rax,-0x8(%rbp)` (i = 1, rax = 1): a step
    # run ahead has already written `a`, which must still read as before;
    # then `addq $0x1,-0x10(%rbp)` and `i` likewise.
    "stepi 1",
    "x/i $pc",
    "print a",
    "print i",
    "x/2gx $rbp-0x10",
    "info registers rip rax",
    "stepi",
    "x/i $pc",
    "print a",
    "print i",
    "stepi 5",
    # A write between steps, over what the step run ahead changed.
    "set var a = 1000",
    "stepi 4",
    "print a",
    "set var i = 7",
    "stepi 6",
    "print i",
    "print a",
    # The thread's siginfo is the last real step's, not the one run ahead.
    "print $_siginfo.si_signo",
    "print $_siginfo._sifields._sigfault.si_addr",
    "stepi",
    # The pc moved by hand: the step run ahead from the old one is void.
    "print $pc",
    "set var $pc = $pc",
    "stepi",
    "info registers rip eflags",
    "tbreak *($pc + 4)",
    "stepi 3",
    "nexti 2",
    "x/i $pc",
    "info registers rax rbp rsp",
    "finish",
    "delete",
    "continue",
]

ALARMS = [
    "handle SIGALRM nostop noprint pass",
    "break spin",
    "continue",
    "stepi 2500",
    "print alarms >= 10",
    "delete",
    "continue",
]

# gdb passes the SIGSEGVs the program recovers from.
FAULTS = [
    "handle SIGSEGV nostop noprint pass",
    "break poll_loop",
    "continue",
    "stepi 400",
    "print $pc",
    "delete",
    "continue",
]

# SIGUSR1 sent from outside between two steps: the next step meets it
# before any instruction runs.
SEND_USR1_AFTER_STEPS = [
    "break spin",
    "continue",
    "delete",
    "stepi 12",
    "python import os, signal; os.kill(gdb.selected_inferior().pid, signal.SIGUSR1)",
    "shell sleep 0.2",
]
SENT_BETWEEN_STEPS = SEND_USR1_AFTER_STEPS + [
    "stepi",
    "print $pc",
    "stepi",
    "print $pc",
    "print $_siginfo.si_signo",
    "continue",
]

# The same, passed to the program, and then gdb gives SIGUSR2 itself.
PASSED_THEN_GIVEN = ["handle SIGUSR1 nostop noprint pass"] + SEND_USR1_AFTER_STEPS + [
    "stepi",
    "print $pc",
    "signal SIGUSR2",
]

# Killed from outside between two steps: the next step reports its death.
KILLED = [
    "break step_loop",
    "continue",
    "delete",
    "stepi 12",
    "python import os, signal; os.kill(gdb.selected_inferior().pid, signal.SIGKILL)",
    "shell sleep 0.2",
    "stepi",
]


def main(args, c):
    prog = program("stepper")
    runs = [("gdbserver", ("--once",)), (args.server, ("--once",))]
    if args.server != "gdbserver":
        runs.append((args.server, ("--once", "--no-step-ahead")))
    results = []
    for kind, options in runs:
        result, _ = run_gdb_tcp(kind, prog, [], STEPPING, options=options)
        if harness.VERBOSE:
            print(result.transcript())
        results.append((kind + " " + " ".join(options), result))
    ref_name, ref = results[0]
    c.contains("reference run reached the exit", ref.of(-1), "exited with code", ref.transcript())
    ref_lines = normalise(ref.transcript().split("\n", 1)[1])
    for name, result in results[1:]:
        lines = normalise(result.transcript().split("\n", 1)[1])
        c.true("stepping transcript of %s is gdbserver's" % name, lines == ref_lines,
               unified_diff(ref_lines, lines, ref_name, name))

    for name, prog_name, commands in (("faults passed to the program", "segv_steps", FAULTS),
                                      ("a kill between steps", "stepper", KILLED),
                                      ("a signal sent between steps", "usr_signals", SENT_BETWEEN_STEPS),
                                      ("a passed signal, then one gdb gives", "usr_signals",
                                       PASSED_THEN_GIVEN)):
        outputs = []
        for kind, options in runs:
            result, server = run_gdb_tcp(kind, program(prog_name), [], commands, options=options)
            if harness.VERBOSE:
                print(result.transcript())
            outputs.append((kind + " " + " ".join(options), result, server))
        ref_name, ref, _ = outputs[0]
        ref_lines = normalise(ref.transcript().split("\n", 1)[1])
        for name_of_run, result, server in outputs[1:]:
            lines = normalise(result.transcript().split("\n", 1)[1])
            c.true("%s: transcript of %s is %s's" % (name, name_of_run, ref_name), lines == ref_lines,
                   unified_diff(ref_lines, lines, ref_name, name_of_run))
            if prog_name != "stepper":  # what the program saw: as under gdbserver
                c.equal("%s: program output of %s is gdbserver's" % (name, name_of_run),
                        outputs[0][2].stdout, server.stdout)

    alarm_prog = program("alarm_steps")
    result, server = run_gdb_tcp(args.server, alarm_prog, [], ALARMS)
    if harness.VERBOSE:
        print(result.transcript())
    c.value("alarms reach the program while it is stepped", result.of(4), "1")
    c.contains("stepped under SIGALRM, the program exits normally", result.of(-1),
               "exited normally", result.transcript())
    c.contains("its alarms arrived and nothing stayed blocked", server.stdout,
               "alarms=some blocked=0", server.stdout)

if __name__ == "__main__":
    run_test("test_step_ahead", main)
