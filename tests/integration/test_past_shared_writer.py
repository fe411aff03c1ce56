#!/usr/bin/env python3
"""Another process writes memory the program shares with it: the past
there is the program's or unknown, never a re-run's guess.

shared_writer.c sums a word of an anonymous MAP_SHARED page over 2,000,000
rounds without a system call; halfway it raises a flag there, and a forked
child writes 54 into the word (and ends only after the rounds, so that no
signal brings a checkpoint between). A copy of the program re-run from a
checkpoint before the rounds holds the page as it was then (private, so
that going back writes nothing into the present) and never sees the
child's write: it arrives at the end of the rounds with another sum. So
btstub re-runs each stretch through shared memory to where the program's
shared bytes are next known (the next system call, checkpoint, or the
present) and compares them; where they differ, the values there are what
the history alone determines.

Recorded by btstub (`--record`), at -O0 and -O2, with one checkpoint before
the rounds (`--checkpoint-every=100000000`) and with the default spacing:
stop at report() (live: its argument, the sum), reverse-continue to late(),
1,000 rounds before the end: its argument is the sum at report() less 1,000
times 54, or unavailable, never another number; with the one checkpoint it
is unavailable and `monitor replay status` tells why (before the check, the
past showed the re-run's sum there: 0). Then at report_again(), after the
child ended (nobody writes the page any more): one step back gives the
live value again, from a copy (the check passes where the bytes are the
same). Where debug registers trap, a watch on the sum going back from
report() stops where the last round changed it, or says it cannot watch
there, never elsewhere.

    python3 test_past_shared_writer.py [-v]
"""

import re

from harness import debug_registers_trap, program, run_gdb_tcp, run_test

UNKNOWN = re.compile(r"<unavailable>|Cannot access memory|value is not available")


def value(text):
    """The printed value of `print EXPR`, or None."""
    m = re.search(r"^\$\d+ = (-?\d+)\s*$", text, re.M)
    return m.group(1) if m else None


def check(c, opt, options, one_checkpoint):
    label = "%s %s" % (opt, " ".join(options) or "default spacing")
    script = ["break report", "continue", "print $rdi",
              "break late", "reverse-continue", "print $rdi", "monitor replay status",
              "delete", "break report_again", "continue", "continue",
              "print $rdi", "reverse-stepi", "print $rdi", "monitor replay status",
              "delete", "continue", "continue", "continue", "continue"]
    result, server = run_gdb_tcp("btstub", program("shared_writer", opt), [], script,
                                 options=["--once", "--record"] + options, timeout=240)
    transcript = result.transcript()
    live = value(result.of_command("print $rdi", 0))
    c.true("%s: the child's write landed in the second half of the rounds, before late() "
           "(else this run proves nothing)" % label,
           live is not None and int(live) % 54 == 0 and 54000 < int(live) <= 54 * 1000000, transcript)
    out = result.of_command("print $rdi", 1)
    late = str(int(live) - 54000) if live is not None else None
    got = value(out)
    c.true("%s: back at late(), 1,000 rounds before the end, the sum is the program's then (the one at "
           "report() less 1,000 times 54) or unknown, never another number" % label,
           got == late or (got is None and UNKNOWN.search(out)), transcript)
    status = result.of_command("monitor replay status", 0)
    if one_checkpoint:
        c.true("%s: with one checkpoint before the rounds, it is unknown" % label,
               got is None and UNKNOWN.search(out), transcript)
        c.contains("%s: monitor replay status tells why" % label, status,
                   "another process wrote memory the program shares", transcript)
    again_live = value(result.of_command("print $rdi", 2))
    again_back = value(result.of_command("print $rdi", 3))
    c.equal("%s: after the child ended, report_again() gets 1,000 times 54" % label, "54000", again_live,
            transcript)
    c.equal("%s: one step back there, the same, from a copy of the program" % label, again_live, again_back,
            transcript)
    c.contains("%s: ... (monitor replay status)" % label, result.of_command("monitor replay status", 1),
               "from a copy of the program", transcript)
    c.contains("%s: the program ran to its end" % label, result.output, "exited normally", transcript)
    c.contains("%s: its output is its own" % label, server.stdout, "again=54000", transcript)


def check_watch(c, options):
    """A watch search through the rounds: the newest change of the sum before
    report() is the last round's (the re-run's sum never changes there)."""
    label = "O0 %s watch" % (" ".join(options) or "default spacing")
    script = ["break report", "continue", "print $rdi", "up", "watch -l sum", "reverse-continue",
              "delete", "kill"]
    result, _ = run_gdb_tcp("btstub", program("shared_writer", "O0"), [], script,
                            options=["--once", "--record"] + options, timeout=240)
    live = value(result.of_command("print $rdi"))
    out = result.of_command("reverse-continue")
    # Going back gdb reports the later value as the old one.
    last_round = "Old value = %s\nNew value = %d" % (live, int(live) - 54) if live is not None else None
    c.true("%s: going back, the watch stops where the last round changed the sum, or says it cannot watch "
           "there, never elsewhere" % label,
           live is not None and (last_round in out or "Cannot watch in this part" in out),
           result.transcript())


def main(args, c):
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        check(c, opt, ["--checkpoint-every=100000000"], True)
        check(c, opt, [], False)
    if debug_registers_trap():
        check_watch(c, ["--checkpoint-every=100000000"])
        check_watch(c, [])
    else:
        c.true("watch searches (skipped: debug registers never trap here)", True)


if __name__ == "__main__":
    run_test("test_past_shared_writer", main)
