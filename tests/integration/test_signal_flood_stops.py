#!/usr/bin/env python3
"""Threads that get signals faster than a recording handles them, while
another thread stops at a breakpoint every millisecond, still get on
(tests/programs/signal_flood_stops.c; found by a review session).

The main thread sends SIGUSR1 to a worker and to a clock reader every 2 ms;
a third thread calls bp() every millisecond, where the client's breakpoint
(`ignore 1 1000000`) stops every thread and resumes them. Recorded, every
delivery, every handler's return and every resume took a checkpoint copy
of the program (about a millisecond each): the next signal arrived while
the last was being handled, and the worker never ran past the start of
its thread (the first `continue` never returned). Now a signal delivered
where the thread's last handler returned, nothing run since, is a flood:
its copies wait for its own branches. The clock reader's vDSO read goes
round again when the kernel's time moved on during it; no copy is taken
while a thread stands in the vDSO or in a handler that interrupted it
there. Checked under `--record` (translated code and int3 trace stops)
and gdbserver: the program ends with both threads' work done.

    python3 test_signal_flood_stops.py [--server gdbserver] [-v]
"""

from harness import program, recording_setups, run_gdb, run_test, stdio_target


def main(args, c):
    setups = recording_setups(args.server)
    prog = program("signal_flood_stops", "O0")
    for name, options in setups:
        commands = ["handle SIGUSR1 nostop noprint pass", "break bp", "ignore 1 1000000",
                    "continue", "continue", "continue"]
        result = run_gdb(commands, prog, stdio_target(args.server, prog, [], options), timeout=150)
        ctx = result.transcript()
        out = "".join(result.of(i) for i in range(3, len(commands)))
        c.contains("%s: both threads' work is done" % name, out, "worker 100 clock 100", ctx)
        c.contains("%s: the program exits 0" % name, out, "exited normally", ctx)


if __name__ == "__main__":
    run_test("test_signal_flood_stops", main)
