#!/usr/bin/env python3
"""sigsuspend, ppoll and pselect that let through a signal already pending
run the handler and return, under `btstub --record`, as natively.

suspend_pending.c raises SIGUSR1 while it is blocked, then lets it
through with each of the three calls. The kernel interrupts the call at
once, and restores the mask the call replaced only as the thread returns
to the program. A checkpoint taken in that stop (a copy is made by a
system call btstub injects into the program) used to return first and
restore the mask then: the signal was blocked again, the call made again
and interrupted again for ever: with SIGUSR1 `nostop` the `continue`
never came back, with `stop` every `continue` reported SIGUSR1 again.
Under translate and int3 trace stops: `handle SIGUSR1 nostop noprint` and
one `continue` bring the program to its end (a recording's stop at
exit_group) with the native output; with `handle SIGUSR1 stop`
three stops for SIGUSR1, then the end. Under gdbserver (no recording) the
same, which proves the test.

    python3 test_suspend_pending.py [--server gdbserver] [-v]
"""

from harness import program, run_gdb_tcp, run_test

EXPECTED = "sigsuspend -1, ppoll -1, pselect -1, got 30"
QUIET = ["handle SIGUSR1 nostop noprint pass", "continue"]
STOPPING = ["handle SIGUSR1 stop print pass", "continue", "continue", "continue", "continue"]
# Its end: a recording stops at the exit_group ("Program stopped.", in
# _exit), as record full does.
END = r"exited normally|Program stopped\.\n\S+ in __GI__exit "


def ends(result, first):
    """The output of the commands from `first` on."""
    return "".join(result.of(i) for i in range(first, len(result.commands)))


def setups(server):
    if server != "btstub":
        return [("no recording", ("--once",))]
    return [("translate", ("--once", "--record", "--trace-stops=translate")),
            ("int3", ("--once", "--record", "--trace-stops=int3"))]


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("suspend_pending", opt)
        for name, options in setups(args.server):
            tag = "%s %s" % (opt, name)
            result, server = run_gdb_tcp(args.server, prog, [], QUIET, options=options, timeout=60)
            ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
            c.true("%s: quiet: the session ended by itself" % tag, result.status is not None, ctx)
            c.matches("%s: quiet: the program reaches its end" % tag, ends(result, 1), END, ctx)
            c.contains("%s: quiet: its output is the native one" % tag, server.stdout, EXPECTED, ctx)

            result, server = run_gdb_tcp(args.server, prog, [], STOPPING, options=options, timeout=60)
            ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
            c.true("%s: stopping: the session ended by itself" % tag, result.status is not None, ctx)
            for n, call in ((1, "sigsuspend"), (2, "ppoll"), (3, "pselect")):
                c.matches("%s: stopping: SIGUSR1 %d (%s)" % (tag, n, call), result.of(n),
                          r"received signal SIGUSR1", ctx)
            c.true("%s: stopping: no fourth SIGUSR1" % tag, "SIGUSR1" not in ends(result, 4), ctx)
            c.matches("%s: stopping: then the program reaches its end" % tag, ends(result, 4), END, ctx)
            c.contains("%s: stopping: its output is the native one" % tag, server.stdout, EXPECTED, ctx)


if __name__ == "__main__":
    run_test("test_suspend_pending", main)
