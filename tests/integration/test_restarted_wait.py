#!/usr/bin/env python3
"""A thread in a system call the kernel restarts stays on it while another
thread stops again and again (tests/programs/restarted_wait.c).

The waiter sleeps in nanosleep while the main thread stops at tick() ten
times. Under `--record` the tracer single-steps a sleep that writes the
time left; the stop of every thread interrupts it, and the step's trap
comes as the call returns its restart code, before the kernel moves the pc
back onto the `syscall` to make the call again. btstub took that trap for
the call's end and ran the waiter on by the `ret` after it (emulated), two
bytes before whose target the kernel then put it: a program built with
TSan died of SIGILL in its background thread's nanosleep (flaky in
test_sanitized_programs). Checked at each stop, with `--record`
(translated code and int3 trace stops) and gdbserver: the waiter's pc is
right after a `syscall`; at the end the program prints that no wait
returned early and exits 0. Before the fix the waiter stood elsewhere from
the first stop on.

    python3 test_restarted_wait.py [--server gdbserver] [-v]
"""

import re

from harness import program, recording_setups, run_gdb, run_test, stdio_target

STOPS = 10


def main(args, c):
    setups = recording_setups(args.server)
    for opt in ("O0", "O2"):
        prog = program("restarted_wait", opt)
        for name, options in setups:
            label = "%s %s" % (opt, name)
            commands = ["handle SIGUSR1 nostop noprint pass", "break tick"]
            for _ in range(STOPS):
                commands += ["continue", "thread apply 2 -q x/i $pc - 2"]
            # Under --record the end takes three: the stop before exit_group,
            # the held end, the exit.
            commands += ["delete", "continue", "continue", "continue"]
            result = run_gdb(commands, prog, stdio_target(args.server, prog, [], options), timeout=180)
            ctx = result.transcript()
            at_call = [re.search(r":\s+syscall\s*$", result.of(3 + 2 * i).strip()) is not None
                       for i in range(STOPS)]
            c.equal("%s: the waiter stands right after its syscall at every stop" % label,
                    [True] * STOPS, at_call, ctx)
            end = "".join(result.of(i) for i in range(len(commands) - 3, len(commands)))
            c.contains("%s: no wait returned early" % label, end, "early 0", ctx)
            c.contains("%s: the program exits 0" % label, end, "exited normally", ctx)


if __name__ == "__main__":
    run_test("test_restarted_wait", main)
