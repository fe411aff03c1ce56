#!/usr/bin/env python3
"""Every thread of a recorded program gets its turn, also when others stop
all the time (tests/programs/spin_barrier.c; found by a review session).

Four (and eight) threads meet at a barrier that spins in user space with
no system call: the first to arrive spin until the last arrives. Recorded,
each spinning thread stops at every log the translated code fills (or at
every branch under int3 trace stops), and btstub, pinned with the program
to one CPU, took the next stop from waitpid(-1), which returns the first
ready thread in the kernel's list: two spinning threads taking turns were
served forever, and the threads still to arrive never left their first
stop (3 runs of 3 hung; the fairness rule looked only at one thread's
stops in a row). Now every second status btstub looks at a few other
threads, in turn, for a ready one. Checked under `--record` (translated
code and int3 trace stops) and gdbserver: the program ends, every thread
arrived.

    python3 test_thread_fairness.py [--server gdbserver] [-v]
"""

from harness import program, recording_setups, run_gdb, run_test, stdio_target


def main(args, c):
    prog = program("spin_barrier", "O0")
    for name, options in recording_setups(args.server):
        for threads in (4, 8):
            result = run_gdb(["continue"], prog, stdio_target(args.server, prog, [str(threads)], options),
                             timeout=90)
            out = result.of(0)
            c.contains("%s, %d threads: every thread arrived" % (name, threads), out,
                       "all %d arrived" % threads, result.transcript())


if __name__ == "__main__":
    run_test("test_thread_fairness", main)
