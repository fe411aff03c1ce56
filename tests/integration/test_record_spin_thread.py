#!/usr/bin/env python3
"""A thread created while recording runs although the thread that created
it spins without a system call until it does.

spin_on_thread.c at -O0 and -O2: main creates a thread and spins on a flag
the thread sets. Under `btstub --record` (and after `monitor record start`
at main) the spinning thread stops under the tracer at every pass and is
resumed at once; every stop was reaped before the new thread's first one,
which waited forever (a hang). gdb must reach MARK done, as with
gdbserver, and `continue` on to the normal exit.

    python3 test_record_spin_thread.py [--server gdbserver] [-v]
"""

import shlex

from harness import marker_line, program, run_gdb, run_test, server_path


def main(args, c):
    done = marker_line("spin_on_thread.c", "done")
    for opt in ("O0", "O2"):
        prog = program("spin_on_thread", opt)
        for how in ("--record", "monitor record start"):
            if args.server == "btstub":
                options = ["--record"] if how == "--record" else []
                target = "| " + shlex.join([server_path("btstub")] + options + ["-", prog])
                start = [] if how == "--record" else ["break main", "continue", "monitor record start"]
            else:
                target = "| " + shlex.join([server_path("gdbserver"), "-", prog])
                start = []
            # Recorded, the end comes in three steps: the stop before
            # exit_group, the held end, the exit.
            commands = start + ["break spin_on_thread.c:%d" % done, "continue", "continue", "continue", "continue"]
            r = run_gdb(commands, prog, target, timeout=60)
            label = "%s, %s" % (opt, how)
            c.contains("%s: the spinning thread sees the new thread's flag" % label, r.of(len(start) + 1),
                       "Breakpoint", r.transcript())
            c.contains("%s: the program ends normally" % label, r.output, "exited normally", r.transcript())


if __name__ == "__main__":
    run_test("test_record_spin_thread", main)
