#!/usr/bin/env python3
"""--checkpoint-memory bounds the copies' memory, and the thinned history
still answers in the past where a checkpoint stayed.

dirty_pages.c overwrites every page of a 4 MiB buffer in each of 80
rounds, each ended by a system call (a checkpoint right after it): every
copy keeps about 4 MiB the program no longer shares. Recorded by btstub
(`--record`) to the end, `monitor record status` must show, with
`--checkpoint-memory=160m`, the checkpoints thinned (fewer than the
rounds) and their memory near the bound; without it, at least one
checkpoint a round and their memory well past it. Beyond 32 copies (both
runs here) their memory is measured on an even sample of them. Then, from the end, `reverse-continue` to a round must
show what the program had there (as a live stop at round 10 does): with
the bound, the last round (the newest checkpoint after a barrier stays;
older rounds may have none left, and their values are unavailable);
without, round 10.

    python3 test_checkpoint_memory.py [-v]
"""

import re
import shlex

from harness import marker_line, program, run_gdb, run_test, server_path

ROUNDS = 80
BOUND_MIB = 160


def status(text):
    m = re.search(r"Checkpoints: (\d+) \(at most \d+\), (\d+) KiB of memory", text)
    return (int(m.group(1)), int(m.group(2)) // 1024) if m else (None, None)


def main(args, c):
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return
    prog = program("dirty_pages", "O0")
    round_line = marker_line("dirty_pages.c", "round")
    done_line = marker_line("dirty_pages.c", "done")
    live = run_gdb(["break %d if i == 10" % round_line, "continue", "print (int)buf[8192]"], prog,
                   "| " + shlex.join([server_path("btstub"), "-", prog, str(ROUNDS)]), timeout=120)
    c.contains("live: round 10 wrote 10", live.of_command("print (int)buf[8192]"), "= 10", live.transcript())

    for bound in (BOUND_MIB, None):
        options = ["--record"] + (["--checkpoint-memory=%dm" % bound] if bound else [])
        target = "| " + shlex.join([server_path("btstub")] + options + ["-", prog, str(ROUNDS)])
        # Bounded: back to the last round (its checkpoint, the newest after
        # a barrier, stays); unbounded: back to round 10.
        want = ROUNDS if bound else 10
        r = run_gdb(["break %d" % done_line, "continue", "monitor record status",
                     "break %d if i == %d" % (round_line, want), "reverse-continue", "print i",
                     "print (int)buf[8192]"],
                    prog, target, timeout=240)
        count, mib = status(r.of_command("monitor record status"))
        label = "--checkpoint-memory=%dm" % bound if bound else "no memory bound"
        c.true("%s: monitor record status counts the checkpoints and their memory" % label,
               count is not None, r.transcript())
        if count is None:
            continue
        if bound:
            c.true("%s: the checkpoints are thinned (%d left after %d rounds)" % (label, count, ROUNDS),
                   count < ROUNDS, r.transcript())
            # Measured after a quarter of the count (at least 8) was added:
            # about 40 copies within the bound, so up to 10 rounds of 4 MiB
            # may come after a measure.
            c.true("%s: their memory stays near the bound (%d MiB)" % (label, mib),
                   mib <= BOUND_MIB + 10 * 5, r.transcript())
        else:
            c.true("%s: a checkpoint at least every round (%d)" % (label, count), count >= ROUNDS, r.transcript())
            c.true("%s: their memory is past the bound (%d MiB)" % (label, mib), mib > BOUND_MIB * 3 // 2,
                   r.transcript())
        c.contains("%s: reverse-continue reaches round %d" % (label, want), r.of_command("print i"),
                   "= %d" % want, r.transcript())
        c.contains("%s: the past holds what the program wrote there" % label,
                   r.of_command("print (int)buf[8192]"), "= %d" % want, r.transcript())

if __name__ == "__main__":
    run_test("test_checkpoint_memory", main)
