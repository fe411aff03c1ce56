#!/usr/bin/env python3
"""btstub runs a program's next single step while gdb still works on the
last one, and undoes it when gdb asks for something else
(stub/step_ahead.h). Nothing of this may show:

1. Stepping through step_loop on tests/programs/stepper.c, gdb's transcript
   is the one gdbserver gives, and the one btstub gives with
   --no-step-ahead. The script stops on instructions that write the
   variables it prints (`add %rax,-0x8(%rbp)` writes `a`) before stepping
   them, changes a variable and the pc between steps, inserts breakpoints
   between steps, and continues to the exit.
2. tests/programs/alarm_steps.c is stepped while an interval timer sends
   SIGALRM (passed to the program without stopping): the program finds its
   signal mask its own again and its alarms delivered (exit code 0).

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
    "print $rax",
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
    "delete",
    "continue",
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

    alarm_prog = program("alarm_steps")
    result, server = run_gdb_tcp(args.server, alarm_prog, [], ALARMS)
    if harness.VERBOSE:
        print(result.transcript())
    c.contains("stepped under SIGALRM, the program exits normally", result.of(-1),
               "exited normally", result.transcript())
    c.contains("its alarms arrived and nothing stayed blocked", server.stdout,
               "alarms=some blocked=0", server.stdout)


if __name__ == "__main__":
    run_test("test_step_ahead", main)
