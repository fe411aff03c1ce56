#!/usr/bin/env python3
"""gdb's `catch syscall` over btstub, as over gdbserver
(tests/programs/catch_syscalls.c, O0 and O2).

btstub did not offer QCatchSyscalls, so gdb said "Your system does not
support this type of catchpoint" and the program ran through every
catchpoint. Now a continue of a thread stops at the entry and the return
of the system calls gdb lists (PTRACE_SYSCALL; stop replies with
syscall_entry:NR / syscall_return:NR), and the transcripts equal
gdbserver's:

1. `catch syscall getppid write`, continues to the end: the entry and the
   return of each of the three getppid()s and of the two writes, in order, at
   the same pcs; the forked child's getppid() is not caught (gdb detaches
   the child); the program exits normally;
2. from main, `catch syscall` (every call): the first sixteen stops, each
   an entry or a return with its call's name, the same pcs, and the same
   $orig_rax at each;
3. `catch syscall getppid`, one stop, `delete`, continue: the program runs
   to its end without another stop (QCatchSyscalls:0);
4. `catch syscall vfork wait4 execve` to the end: the vfork's return
   after its child ended, and the execve's return in the new image
   (at _start), each told as a return; before, btstub counted stops to
   tell entries from returns, and every stop after a vfork, and the
   execve's return, came out the wrong way round (a review's sessions).
   Now the kernel says which (PTRACE_GET_SYSCALL_INFO).

Under `--record` (btstub only) catching is refused while the program is
recorded (the tracer steps every system call): gdb warns that it cannot
insert the catchpoint, and the program runs to its recorded end.

    python3 test_catch_syscall.py [-v]
"""

import re
import shlex

from harness import program, run_gdb, run_test, server_path

CATCH_LINE = re.compile(r"^Catchpoint \d+ \((call to|returned from) syscall (\w+)\), (0x[0-9a-f]+ in )?(\S+)", re.M)


def target(kind, prog, options=()):
    return "| " + shlex.join([server_path(kind)] + list(options) + ["-", prog])


def stops(result):
    """(call to|returned from, name, where) of each catchpoint stop, where
    being the function gdb names (its pc where it names none)."""
    return [(m.group(1), m.group(2), m.group(4)) for m in CATCH_LINE.finditer(result.output)]


def values(result, name):
    return re.findall(r"^\$\d+ = (.*)$", result.output, re.M)


def sessions(prog):
    """The three sessions' gdb commands."""
    listed = ["catch syscall getppid write"] + ["continue", "print $pc"] * 11
    every = ["break main", "continue", "catch syscall"] + ["continue", "print $pc", "print $orig_rax"] * 16
    deleted = ["catch syscall getppid", "continue", "delete", "continue"]
    vfork_exec = ["catch syscall vfork wait4 execve"] + ["continue", "print $pc"] * 9
    return {"listed": listed, "every": every, "deleted": deleted, "vfork_exec": vfork_exec}


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("catch_syscalls", opt)
        for name, commands in sessions(prog).items():
            got = run_gdb(commands, prog, target("btstub", prog), timeout=60)
            ref = run_gdb(commands, prog, target("gdbserver", prog), timeout=60)
            what = "%s %s" % (opt, name)
            c.equal("%s: the same catchpoint stops as gdbserver" % what, stops(ref), stops(got),
                    "btstub:\n%s\ngdbserver:\n%s" % (got.transcript()[-3000:], ref.transcript()[-3000:]))
            c.equal("%s: the same values at them as gdbserver" % what, values(ref, name), values(got, name),
                    "btstub:\n%s" % got.transcript()[-3000:])
            if name == "listed":
                c.equal("%s: getppid and write, entry and return each" % what,
                        [("call to", "getppid"), ("returned from", "getppid")] * 3 +
                        [("call to", "write"), ("returned from", "write")] * 2,
                        [s[:2] for s in stops(got)], got.transcript()[-3000:])
            if name == "every":
                c.equal("%s: sixteen stops" % what, 16, len(stops(got)), got.transcript()[-3000:])
            if name == "vfork_exec":
                c.equal("%s: each call's entry, then its return" % what,
                        [("call to", "wait4"), ("returned from", "wait4"), ("call to", "vfork"),
                         ("returned from", "vfork"), ("call to", "wait4"), ("returned from", "wait4"),
                         ("call to", "execve"), ("returned from", "execve")],
                        [s[:2] for s in stops(got)], got.transcript()[-3000:])
            if name in ("listed", "deleted", "vfork_exec"):
                c.true("%s: the program ends normally" % what, "exited normally" in got.output,
                       got.transcript()[-3000:])
        recorded = run_gdb(["catch syscall getppid", "continue"], prog,
                           target("btstub", prog, ["--record"]), timeout=120)
        c.true("%s --record: gdb cannot insert the catchpoint" % opt,
               "Error inserting catchpoint" in recorded.output, recorded.transcript()[-3000:])
        c.equal("%s --record: no catchpoint stop" % opt, [], stops(recorded), recorded.transcript()[-3000:])
        c.true("%s --record: the program runs to its recorded end" % opt,
               "catch_syscalls: child status 0" in recorded.output, recorded.transcript()[-3000:])


if __name__ == "__main__":
    run_test("test_catch_syscall", main)
