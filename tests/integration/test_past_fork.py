#!/usr/bin/env python3
"""Values right after a vfork and a fork, in the recorded past, equal the
live ones; a watchpoint in reverse finds the writes after them.

past_fork.c (O0, O2) vforks, computes and calls after_vfork(sum, forked),
then forks and calls after_fork(sum, forked); no system call lies between
each call and the function. Under `btstub --record
--checkpoint-every=1000000000` (no periodic checkpoint: only those after
system calls), with the translating tracer and with int3 trace stops:

- values: gdb stops live at both functions (`info args`), runs to the
  final printf, and reverse-continues to each function again, where `info
  args` must equal the live stop and `monitor replay status` must say the
  values come from a copy of the program. The fork and the vfork stop the
  program in their ptrace event stops, which gdb hears of before the call
  ends: the checkpoint due after the call was lost there, so the newest
  one before the point stood before the call, and its copy met the call
  ("The copy met a system call the recording did not have there"): every
  value was unavailable.
- watch: live at both functions and the printf, `print sink`; then
  `watch sink` and reverse-continue from the printf: the first stops in
  after_fork with sink as it was live there, the second (across the fork)
  in after_vfork, likewise, the third (across the vfork) at main's write;
  the fourth would cross the delivery of a SIGUSR2 (no copy re-runs it),
  and fails. A watch search used to fail as a whole where any signal, or
  any system call with no checkpoint right after it, lay in the range
  (here the SIGUSR2, which kept every search from the first), and a fork's
  or vfork's copy came at the thread's next stop, not right after the
  call.

    python3 test_past_fork.py [-v]
"""

import re

from harness import debug_registers_trap, program, run_gdb_tcp, run_test

VALUES = [
    "handle SIGUSR2 nostop noprint pass",
    "break after_vfork", "break after_fork", "break printf",      # 1-3
    "continue", "info args",                                      # 4-5: live at after_vfork
    "continue", "info args",                                      # 6-7: live at after_fork
    "continue",                                                   # 8: printf
    "reverse-continue", "info args", "monitor replay status",     # 9-11: back at after_fork
    "reverse-continue", "info args", "monitor replay status",     # 12-14: back at after_vfork
    "delete", "continue", "continue",                             # 15-17: the live end, the program's end
]

WATCH = [
    "handle SIGUSR2 nostop noprint pass",
    "break after_vfork", "break after_fork", "break printf",      # 1-3
    "continue", "print sink",                                     # 4-5: live at after_vfork
    "continue", "print sink",                                     # 6-7: live at after_fork
    "continue", "print sink",                                     # 8-9: printf
    "delete", "watch sink",                                       # 10-11
    "reverse-continue", "print sink",                             # 12-13: after_fork's write
    "reverse-continue", "print sink",                             # 14-15: after_vfork's write
    "reverse-continue", "print sink",                             # 16-17: main's write
    "reverse-continue",                                           # 18: across SIGUSR2's delivery
    "delete", "continue", "continue",                             # 19-21
]

TRACERS = (("translate", "--trace-stops=translate"), ("int3", "--trace-stops=int3"))


def args_of(text):
    """The `info args` lines: name = value."""
    return [line for line in text.splitlines() if re.match(r"^\w+ = ", line)]


def value_of(text):
    m = re.search(r"^\$\d+ = (-?\d+)$", text, re.M)
    return m.group(1) if m else None


def check_values(tag, prog, tracer, c):
    options = ("--once", "--record", "--checkpoint-every=1000000000", tracer)
    result, server = run_gdb_tcp("btstub", prog, [], VALUES, options=options, timeout=120)
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.matches("%s: live at after_vfork" % tag, result.of(4), r"Breakpoint 1, after_vfork \(")
    c.matches("%s: live at after_fork" % tag, result.of(6), r"Breakpoint 2, after_fork \(")
    c.matches("%s: back at after_fork" % tag, result.of(9), r"Breakpoint 2, after_fork \(")
    c.matches("%s: back at after_vfork" % tag, result.of(12), r"Breakpoint 1, after_vfork \(")
    for what, live, past, status in (("after_fork", 7, 10, 11), ("after_vfork", 5, 13, 14)):
        c.equal("%s: live args at %s are sum and forked = 1" % (tag, what), ["sum", "forked = 1"],
                [a.split(" = ")[0] if a.startswith("sum") else a for a in args_of(result.of(live))], ctx)
        c.equal("%s: args back at %s equal the live ones" % (tag, what),
                args_of(result.of(live)), args_of(result.of(past)), ctx)
        c.contains("%s: the values back at %s come from a copy" % (tag, what),
                   result.of(status), "from a copy of the program", ctx)
    c.contains("%s: the program ends as natively" % tag, server.stdout, "vfork 4, fork 3, sink ", ctx)


def check_watch(tag, prog, tracer, c):
    options = ("--once", "--record", "--checkpoint-every=1000000000", tracer)
    result, server = run_gdb_tcp("btstub", prog, [], WATCH, options=options, timeout=120)
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    at_vfork, at_fork, at_end = value_of(result.of(5)), value_of(result.of(7)), value_of(result.of(9))
    c.equal("%s: live sink at after_vfork is main's 1" % tag, "1", at_vfork, ctx)
    c.true("%s: live sink at after_fork and at the end are numbers" % tag,
           at_fork is not None and at_end is not None, ctx)
    c.matches("%s: the watch stops back in after_fork" % tag, result.of(12),
              r"(?s)Hardware watchpoint \d+: sink.*Old value = %s\nNew value = %s\n.*after_fork \("
              % (at_end, at_fork), ctx)
    c.equal("%s: sink there is after_fork's live value" % tag, at_fork, value_of(result.of(13)), ctx)
    c.matches("%s: across the fork, the watch stops in after_vfork" % tag, result.of(14),
              r"(?s)Hardware watchpoint \d+: sink.*Old value = %s\nNew value = %s\n.*after_vfork \("
              % (at_fork, at_vfork), ctx)
    c.equal("%s: sink there is after_vfork's live value" % tag, at_vfork, value_of(result.of(15)), ctx)
    c.matches("%s: across the vfork, the watch stops at main's write" % tag, result.of(16),
              r"(?s)Hardware watchpoint \d+: sink.*Old value = 1\nNew value = 0\n.*main \(", ctx)
    c.equal("%s: sink there is 0" % tag, "0", value_of(result.of(17)), ctx)
    c.contains("%s: across the signal's delivery the search fails, it never passes it unseen" % tag,
               result.of(18), "Cannot watch in this part of the recorded past", ctx)
    c.contains("%s: the program ends as natively" % tag, server.stdout, "vfork 4, fork 3, sink %s" % at_end, ctx)


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    # Watches in the past run in a copy's debug registers; btstub refuses
    # Z2-Z4 where they never trap (test_watch checks that).
    watches = debug_registers_trap()
    if not watches:
        print("SKIP watchpoints across fork: debug registers never trap here (btstub --probe)")
    for opt in ("O0", "O2"):
        prog = program("past_fork", opt)
        for name, tracer in TRACERS:
            check_values("%s %s" % (opt, name), prog, tracer, c)
            if watches:
                check_watch("%s %s watch" % (opt, name), prog, tracer, c)


if __name__ == "__main__":
    run_test("test_past_fork", main)
