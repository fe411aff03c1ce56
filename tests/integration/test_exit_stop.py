#!/usr/bin/env python3
"""A recorded program stops before it exits, as under gdb's record full.

exit_paths.c exits from a nested call. Recorded by btstub (`--record`, no
`record` on gdb's side), `continue` stops with "Program stopped." at the
exit_group system call instead of letting the program end; from there gdb
walks back (reverse-stepi, reverse-finish, reverse-continue to a
breakpoint) and forward again to the end of the history. At every stop the
probe (pc, function, frames) must equal what gdb's own record full shows
on the same program (gdb running it natively). Then btstub's next
`continue` holds the program's end (reported as SIGKILL: test_past_exit
checks the history there) and the one after lets the program exit with
its status (record full would stop again: it never lets a recorded
program exit).

Both sides run the program with the GLIBC_TUNABLES that keep glibc off the
AVX-512 string functions record full cannot record.

    python3 test_exit_stop.py [-v]
"""

import shlex

from harness import marker_line, program, run_gdb, run_test, server_path
from test_past_exit import PROBE
from test_past_watch import own_recording_against_record_full


def walk():
    motions = ["continue", "reverse-stepi", "reverse-stepi", "reverse-finish",
               "break %d" % marker_line("exit_paths.c", "exit_call"), "reverse-continue",
               "delete", "continue"]
    out = []
    for i, m in enumerate(motions):
        out.append(m)
        if not m.startswith(("break", "delete")):
            out.append("python probe('%d:%s')" % (i, m))
    return out


def probes(text):
    return [l for l in text.splitlines() if l.startswith("PROBE ")]


def main(args, c):
    if not own_recording_against_record_full(args, c):
        return
    prog = program("exit_paths")
    reference = run_gdb([PROBE, "break main", "run", "record full"] + walk(), prog, timeout=120)
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    subject = run_gdb([PROBE, "break main", "continue"] + walk() + ["continue", "continue"], prog, target,
                      timeout=120)
    c.contains("record full stops before exit_group", reference.output, "Program stopped.",
               reference.transcript())
    c.contains("btstub stops before exit_group", subject.of_command("continue", 1), "Program stopped.",
               subject.transcript())
    expected, actual = probes(reference.output), probes(subject.output)
    c.true("record full's walk has probes", len(expected) == 6, reference.transcript())
    c.equal("the walk back from the exit and forward again equals record full's", expected, actual,
            subject.transcript())
    c.contains("forward again: the end of the history", subject.of_command("continue", 2),
               "No more reverse-execution history.", subject.transcript())
    c.contains("the next continue holds the program's end (test_past_exit)", subject.of_command("continue", 3),
               "Program received signal SIGKILL", subject.transcript())
    c.contains("the one after lets the program exit with its status", subject.of_command("continue", 4),
               "exited with code 05", subject.transcript())


if __name__ == "__main__":
    run_test("test_exit_stop", main)
