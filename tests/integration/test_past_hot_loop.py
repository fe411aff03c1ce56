#!/usr/bin/env python3
"""Values in the past inside hot code, where the copy of the program stops
at many visits of one pc, against gdb's record full.

past_hot_loop.c runs a `rep stosb` (label rep_insn) 402 times with 0-4
iterations, then spin()'s loop 6,000 times, writing a, b, c, d now and
then. Recorded by btstub (`--record --checkpoint-every=700`, no `record` on gdb's side), gdb goes
back from MARK done to the last write in spin()'s loop (a reverse-continue
to a breakpoint: the copy runs to one of up to 2,000 visits of that pc),
reverse-steps in the loop, searches back with four watchpoints (every
debug register a watch: the copy runs to the point with an int3) and with
one (an execute breakpoint in a debug register beside the watch), then goes
back to rep_insn's last run (the copy passes 400 runs of a repeated string
instruction at its target) and searches back from there with four watches
and with one. At every stop the location, the watchpoint report and the
registers that neither depend on where the stack is (the two runs' stacks
differ) nor are r8-r15 (gdb 13's record full does not undo every write to
them) must equal record full's natively.

The same again with `--checkpoint-every=1000000`: no copy but those the
system calls take (the loops between them are re-run whole), the same
stops and registers, and fewer checkpoints taken in all (`monitor record
status`); each search with watchpoints halves that long stretch where they
fired and steps at most 5,000 instructions (`monitor replay status`'s
"Last watch search"), where stepping it all would be some 70,000.

Before all that, a reverse-continue to the last of 2,000 runs of an
indirect call (icall_insn in icall_loop), where the copy cannot count the
visits of the pc itself (the jmp would cover the call): it counts those of
the first instruction of the pc's block, then runs on to the pc.

`monitor replay status` after that and after each reverse-stepi in the
loop must tell a copy that counted the visits of its pc itself and stopped
once per run (decoder/counting_patch.h; a copy left behind every 256
visits is a run of its own, the run on from the block's start another),
where an execute breakpoint stops at every visit. Then no copy of the
program may be left.

    python3 test_past_hot_loop.py [-v]
"""

import re
import shlex

from harness import debug_registers_trap, marker_line, program, run_gdb, run_test, server_path
from test_past_watch import leftovers, own_recording_against_record_full

REGISTERS = "info registers rip rax rcx rdx rsi rdi eflags"
STATUS = "monitor replay status"
RECORD_STATUS = "monitor record status"
WATCH_ALL = ["watch a", "watch b", "watch c", "watch d"]


def walk(status=(), watches=True, searched=()):
    """The motions; `status` follows each reverse-stepi in spin() and
    `searched` each search with watchpoints (btstub only); without
    `watches`, the searches with watchpoints are left out."""
    status = list(status)
    searched = list(searched)
    spin_write = "break %d" % marker_line("past_hot_loop.c", "spin_write")
    steps = (["break %d" % marker_line("past_hot_loop.c", "done"), "continue", "delete",
              "break *icall_insn", "reverse-continue", REGISTERS] + status + ["delete",
              spin_write, "reverse-continue", REGISTERS, "delete",
              "reverse-stepi", REGISTERS] + status + ["reverse-stepi", REGISTERS] + status +
             ["reverse-stepi", REGISTERS] + status)
    if not watches:
        return steps + ["break *rep_insn", "reverse-continue", REGISTERS, "delete"]
    return (steps +
            WATCH_ALL + ["reverse-continue", REGISTERS, "print c"] + searched + ["delete",
                         "watch c", "reverse-continue", REGISTERS, "print c"] + searched + ["delete",
                         "break *rep_insn", "reverse-continue", REGISTERS, "delete"] +
            WATCH_ALL + ["reverse-continue", REGISTERS, "print b"] + searched + ["delete",
                         "watch b", "reverse-continue", REGISTERS, "print b"] + searched + ["delete"])


def stops(text):
    """The lines each motion printed, watchpoint and breakpoint numbers made alike."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"(Hardware )?[Ww]atchpoint \d+", "Watchpoint N", line)
        line = re.sub(r"Breakpoint \d+", "Breakpoint N", line)
        line = re.sub(r"^\$\d+ = ", "$N = ", line)
        if line.startswith("Breakpoint N") and " at 0x" in line and "file" in line:
            continue  # set before the run: gdb shows an unrelocated address natively
        if line.startswith(("Watchpoint N", "Old value", "New value", "$N = ")) or " at " in line \
                or re.match(r"^\d+\t", line) or re.match(r"^(r[a-z0-9]+|eflags) +0x", line) or "rep_insn" in line:
            out.append(line)
    return out


def stops_per_visit(status):
    """(stops, visits) of the copy's last re-run, from monitor record status."""
    m = re.search(r"its last re-run stopped it (\d+) times for (\d+) visits", status)
    return (int(m.group(1)), int(m.group(2))) if m else None


def search_effort(status):
    """(native re-runs, halvings, instructions stepped) of the last search
    with watchpoints, from monitor replay status."""
    m = re.search(r"Last watch search: (\d+) native re-runs with the watches, (\d+) halvings, (\d+) instructions "
                  r"stepped", status)
    return tuple(int(g) for g in m.groups()) if m else None


def taken_in_all(status):
    m = re.search(r"(\d+) taken in all", status)
    return int(m.group(1)) if m else None


def recorded(prog, options, commands):
    """gdb over `btstub --record OPTIONS`: the motions, then the record status."""
    target = "| " + shlex.join([server_path("btstub"), "--record", "--trace-size=67108864"] + options + ["-", prog])
    return run_gdb(["break main", "continue"] + commands + [RECORD_STATUS], prog, target, timeout=240)


def walked(result):
    """What the motions printed, without the status commands."""
    return result.preamble + "".join(out or "" for cmd, out in result.outputs if cmd not in (STATUS, RECORD_STATUS))


def main(args, c):
    if not own_recording_against_record_full(args, c):
        return
    watches = debug_registers_trap()
    if not watches:
        print("SKIP the searches with watchpoints: debug registers never trap here (btstub --probe)")
    for opt in ("O0", "O2"):
        prog = program("past_hot_loop", opt)
        reference = run_gdb(["break main", "run", "record full", "set can-use-hw-watchpoints 0"] +
                            walk(watches=watches),
                            prog, timeout=240)
        subject = recorded(prog, ["--checkpoint-every=700"], walk([STATUS], watches))
        expected = stops(reference.output)
        c.true("%s: record full stops at the writes in the loops" % opt,
               (sum(1 for l in expected if l.startswith("Old value")) >= 4 or not watches) and
               any("rep_insn" in l for l in expected), reference.transcript())
        c.equal("%s: the stops and registers equal record full's" % opt, expected, stops(walked(subject)),
                subject.transcript())
        runs = [stops_per_visit(out or "") for cmd, out in subject.outputs if cmd == STATUS]
        c.true("%s: a re-run into the loop stopped the copy once, not at every visit" % opt,
               all(r is not None for r in runs) and max(r[1] for r in runs) > 50 and
               all(r[0] <= r[1] // 256 + 2 for r in runs), subject.transcript())
        c.equal("%s: no copy of the program is left" % opt, [], leftovers(prog))
        sparse = recorded(prog, ["--checkpoint-every=1000000"], walk(watches=watches, searched=[STATUS]))
        c.equal("%s --checkpoint-every=1000000: the stops and registers equal record full's" % opt,
                expected, stops(walked(sparse)), sparse.transcript())
        if watches:
            # The loops are one stretch of some 70,000 instructions: the
            # search halves it where the watches fired and steps only the
            # last 256 blocks or fewer.
            efforts = [search_effort(out or "") for cmd, out in sparse.outputs if cmd == STATUS]
            c.true("%s --checkpoint-every=1000000: each search halved the stretch and stepped at most 5,000 "
                   "instructions (%s)" % (opt, efforts),
                   len(efforts) == 4 and None not in efforts and all(e[1] > 0 and 0 < e[2] <= 5000 for e in efforts),
                   sparse.transcript())
        taken = {700: taken_in_all(subject.of_command(RECORD_STATUS) or ""),
                 1000000: taken_in_all(sparse.of_command(RECORD_STATUS) or "")}
        c.true("%s: --checkpoint-every=1000000 takes fewer checkpoints (%s)" % (opt, taken),
               None not in taken.values() and taken[1000000] < taken[700], str(taken))
        c.equal("%s: no copy of the program is left" % opt, [], leftovers(prog))

if __name__ == "__main__":
    run_test("test_past_hot_loop", main)
