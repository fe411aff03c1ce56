#!/usr/bin/env python3
"""gdb's `set $_siginfo...` changes the siginfo a signal is delivered with,
as under gdbserver (qXfer:siginfo:write; tests/programs/siginfo_write.c,
O0 and O2). btstub did not offer it: gdb said "Unable to write siginfo"
and the program got the signal as it was sent.

At the stop for a sigqueue()d SIGUSR1 (value 7, SI_QUEUE), gdb sets the
value to 42 and the code to SI_USER (0), and continues: the handler
prints "value 42 code 0", as under gdbserver; unchanged, "value 7 code
-1". Also under `--record` (the live stop of a recorded program).

    python3 test_siginfo_write.py [--server gdbserver] [-v]
"""

import re
import shlex

from harness import program, run_gdb, run_test, server_path


def handled(result):
    m = re.search(r"siginfo_write: value (-?\d+) code (-?\d+)", result.output)
    return (int(m.group(1)), int(m.group(2))) if m else None


def main(args, c):
    modes = [[]] + ([["--record"]] if args.server == "btstub" else [])
    for opt in ("O0", "O2"):
        prog = program("siginfo_write", opt)
        for mode in modes:
            target = "| " + shlex.join([server_path(args.server)] + mode + ["-", prog])
            what = "%s %s %s" % (opt, args.server, " ".join(mode) or "(not recording)")
            changed = run_gdb(["continue", "print $_siginfo._sifields._rt.si_sigval.sival_int",
                               "set $_siginfo._sifields._rt.si_sigval.sival_int = 42", "set $_siginfo.si_code = 0",
                               "print $_siginfo._sifields._rt.si_sigval.sival_int", "continue"],
                              prog, target, timeout=90)
            c.equal("%s: the value read at the stop, then the one written" % what, ["7", "42"],
                    re.findall(r"^\$\d+ = (-?\d+)$", changed.output, re.M), changed.transcript()[-3000:])
            c.true("%s: gdb writes siginfo" % what, "Unable to write siginfo" not in changed.output,
                   changed.transcript()[-3000:])
            c.equal("%s: the handler gets the siginfo written" % what, (42, 0), handled(changed),
                    changed.transcript()[-3000:])
            same = run_gdb(["continue", "continue"], prog, target, timeout=90)
            c.equal("%s: unchanged, the handler gets the siginfo sent" % what, (7, -1), handled(same),
                    same.transcript()[-3000:])


if __name__ == "__main__":
    run_test("test_siginfo_write", main)
