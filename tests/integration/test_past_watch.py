#!/usr/bin/env python3
"""Watchpoints in the recorded past stop where record full's do.

past_watch.c writes `counter` in bump() (twice with a value that leaves it
unchanged) and `buf` only by read(). Recorded by btstub (`--record`, no
`record` on gdb's side), gdb goes back from MARK done with `watch buf` to
the read() system call that filled it, then, back at the end, with `watch
counter` (reverse-continue four times, through the unchanged writes),
forward again with `continue` in the past, and over one write with
reverse-stepi. At every
stop the watchpoint report (old and new value) and the location must equal
what gdb's own record full prints on the same program. Single steps and
searches that start or end right at read()'s system call report its write
(the checkpoint after the call lies at the step's end). btstub's watchpoints
are hardware ones (Z2, searched in copies of the program); record full's
are software ones: gdb 13's record full passes hardware watchpoints by
when it runs natively. Then no copy of the program may be left.

Both sides run the program with the GLIBC_TUNABLES that keep glibc off the
AVX-512 string functions record full cannot record.

    python3 test_past_watch.py [-v]
"""

import os
import re
import shlex
import subprocess

from harness import debug_registers_trap, marker_line, program, run_gdb, run_test, server_path

TUNABLES = ("glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX2,-AVX,-EVEX,-BMI1,-BMI2,"
            "-LZCNT,-MOVBE,-RTM,-ERMS,-FSRM,-AVX_Fast_Unaligned_Load")


def walk():
    return ["break %d" % marker_line("past_watch.c", "done"), "continue",
            "watch buf",
            "reverse-continue",
            "print buf",
            "delete",
            "continue",
            "watch counter",
            "reverse-continue", "reverse-continue", "reverse-continue", "reverse-continue",
            "continue", "continue",
            "reverse-stepi", "reverse-stepi", "reverse-stepi", "reverse-stepi",
            "print counter"]


def stops(text):
    """The lines each motion printed, watchpoint kinds and numbers made alike."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"(Hardware )?[Ww]atchpoint \d+", "Watchpoint N", line)
        line = re.sub(r"^\$\d+ = ", "$N = ", line)
        if line.startswith("Breakpoint") and " at 0x" in line:
            continue  # set before the run: gdb shows an unrelocated address natively
        if line.startswith(("Watchpoint N", "Old value", "New value", "$N = ")) or " at " in line \
                or re.match(r"^\d+\t", line):
            out.append(line)
    return out


def leftovers(prog):
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [l for l in ps.splitlines() if prog in l and "gdb" not in l and "btstub" not in l]


def own_recording_against_record_full(args, c):
    """btstub's own recording is compared with gdb's record full, both
    sides under TUNABLES; gdbserver has no recording: False (skipped)."""
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return False
    os.environ["GLIBC_TUNABLES"] = TUNABLES
    return True


def copies_die_with_the_program(c):
    """`kill` in the past, btstub staying (--multi): no copy may outlive the program."""
    prog = program("past_watch", "O0")
    count = "shell ps -eo args | grep -c '^%s$' || true" % prog
    target = "target extended-remote | " + shlex.join([server_path("btstub"), "--multi", "--record", "-"])
    r = run_gdb([target, "set remote exec-file " + prog, "break %d" % marker_line("past_watch.c", "done"), "run",
                 "reverse-step", "print counter", count, "monitor record status", "kill", count], prog,
                timeout=120)
    c.true("copies exist while replaying", r.of(6).strip() not in ("", "0", "1"), r.transcript())
    status = re.search(r"Checkpoints: (\d+) \(at most \d+\), (\d+) KiB of memory", r.of(7))
    c.true("monitor record status counts the checkpoints and their memory",
           status is not None and int(status.group(1)) > 0 and int(status.group(2)) > 0, r.transcript())
    c.equal("no copy is left once the program is killed", "0", r.of(9).strip(), r.transcript())


def stepped_over_call(c):
    """The client's own stepi over read()'s system call leaves a checkpoint
    behind it, so a watch search can go back across the call; and recording
    cannot stop while replaying (gdb would show the past and run from the
    present)."""
    prog = program("past_watch", "O0")
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    r = run_gdb(["break read", "continue", "stepi 6", "delete", "watch counter", "reverse-continue",
                 "monitor record stop"], prog, target, timeout=120)
    back = r.of_command("reverse-continue")
    c.true("a watch search goes back across a system call the client stepped over",
           "Old value = 7" in back and "New value = 4" in back and "bump" in back, r.transcript())
    c.contains("monitor record stop is refused while replaying", r.of_command("monitor record stop"),
               "Cannot stop recording while replaying", r.transcript())


def steps_across_the_call(c):
    """Single steps that start or end at read()'s system call, with a watch
    on what it writes: the checkpoint right after the call is where the
    step ends, and what the call wrote is read from it (both ways, and a
    search back from just after the call). Refused before: "a signal, or a
    system call without a checkpoint after it, lies in between"."""
    prog = program("past_watch", "O0")
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    r = run_gdb(["break %d" % marker_line("past_watch.c", "done"), "continue", "watch buf", "reverse-continue",
                 "print $pc", "stepi", "print $pc", "reverse-stepi", "print $pc", "continue", "reverse-continue",
                 "print $pc"], prog, target, timeout=120)
    at_call = r.of_command("print $pc", 0).split("=")[-1].strip()
    c.contains("the search back stops at the system call", r.of_command("reverse-continue", 0), "read",
               r.transcript())
    empty, filled = r"'\000' <repeats 15 times>", r'"watchme!'
    for label, command, index, old, new in (
            ("a stepi over the call", "stepi", 0, empty, filled),
            ("a reverse-stepi back over it", "reverse-stepi", 0, filled, empty),
            ("a continue from it", "continue", 1, empty, filled),
            ("a reverse-continue from just after it", "reverse-continue", 1, filled, empty)):
        shown = r.of_command(command, index)
        c.true("%s reports the call's write" % label,
               re.search(r"Old value = %s" % re.escape(old), shown) is not None
               and re.search(r"New value = %s" % re.escape(new), shown) is not None, r.transcript())
    after_call = r.of_command("print $pc", 1).split("=")[-1].strip()
    c.true("the stepi ends just past the call", after_call != at_call and "read" in after_call, r.transcript())
    c.equal("the reverse-stepi stands at the call again", at_call, r.of_command("print $pc", 2).split("=")[-1].strip(),
            r.transcript())
    c.equal("the reverse-continue stands at the call again", at_call,
            r.of_command("print $pc", 3).split("=")[-1].strip(), r.transcript())


def main(args, c):
    if not own_recording_against_record_full(args, c):
        return
    if not debug_registers_trap():
        # btstub's watches in the past run in a copy's debug registers; it
        # refuses Z2-Z4 where they never trap (test_watch checks that).
        print("SKIP watchpoints in the past: debug registers never trap here (btstub --probe)")
        return
    for opt in ("O0", "O2"):
        prog = program("past_watch", opt)
        reference = run_gdb(["break main", "run", "record full", "set can-use-hw-watchpoints 0"] + walk(),
                            prog, timeout=120)
        target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
        subject = run_gdb(["break main", "continue"] + walk() + ["set var counter = 99", "print counter"], prog,
                          target, timeout=120)
        expected = stops(reference.output)
        c.true("%s: record full stops at the watched writes" % opt,
               sum(1 for l in expected if l.startswith("Old value")) >= 5, reference.transcript())
        walked = subject.preamble + "".join(subject.of(i) for i in range(2 + len(walk())))
        c.equal("%s: the watchpoint stops equal record full's" % opt, expected, stops(walked),
                subject.transcript())
        c.contains("%s: buf was filled by read()" % opt, subject.of_command("reverse-continue", 0), "read",
                   subject.transcript())
        # gdb shows any refused memory write so (its M packet takes no text).
        c.contains("%s: the past is read-only" % opt, subject.of_command("set var counter = 99"),
                   "Cannot access memory", subject.transcript())
        c.true("%s: the value in the past stays" % opt,
               "= 99" not in subject.of_command("print counter", 1), subject.transcript())
        c.equal("%s: no copy of the program is left" % opt, [], leftovers(prog))
    copies_die_with_the_program(c)
    stepped_over_call(c)
    steps_across_the_call(c)


if __name__ == "__main__":
    run_test("test_past_watch", main)
