#!/usr/bin/env python3
"""A log the program wrote over is lost with a gap in the trace, never
joined across.

spoil_log.c finds the translating tracer's log area in its own memory
(/proc/self/maps) and writes its cursor out of shape (8 bytes past a
record), then makes a system call, where btstub drains the log and finds
the cursor bad: the branches logged since the last drain cannot be told
apart from garbage and are lost. Recorded under `--trace-stops=translate`
to the stop before the exit, at -O0 and -O2, btstub must say so on stderr
and in `monitor record status` (one log lost), and the branch trace (read
as gdb reads it, qXfer:btrace:read:all) must hold exactly one gap (a block
that ends at 0: what ran up to the system call is unknown) with everything
after it equal to the same program's trace under the ptrace tracer
(`--trace-stops=int3`, where there is no such area and nothing is spoiled;
the two runs differ only before the gap, in how many lines of
/proc/self/maps the program reads). Before the gap was stored the trace
joined the block before the hole to the system call's block.

Runs against btstub only (gdbserver has neither --record nor translation).

    python3 test_translate_lost_log.py [-v]
"""

from harness import program, run_test
from translate_compare import record

# Blocks of the work after the system call (3,000 rounds, a call and a
# loop branch each), at least.
MIN_AFTER = 3000


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        prog = program("spoil_log", opt)
        ref, got = record(prog, [], "int3"), record(prog, [], "translate")
        ctx = "translate status:\n%s\ntranslate stderr:\n%s" % (got["status"], got["stderr"][-2000:])
        c.contains("%s: the reference run spoils nothing" % opt, ref["stdout"], "spoiled: 0")
        c.contains("%s: the translate run spoils its log's cursor" % opt, got["stdout"], "spoiled: 1")
        c.contains("%s: btstub says the log is lost" % opt, got["stderr"], "a bad log cursor", ctx)
        c.contains("%s: monitor record status counts one lost log" % opt, got["status"],
                   "each a gap in the trace: 1", ctx)
        # Newest first: the blocks before the gap in the list ran after it.
        gaps = [i for i, (_, end) in enumerate(got["blocks"]) if end == 0]
        c.equal("%s: the trace holds one gap" % opt, 1, len(gaps), ctx)
        c.equal("%s: the reference holds none" % opt, [], [i for i, (_, e) in enumerate(ref["blocks"]) if e == 0])
        if len(gaps) == 1:
            after = gaps[0]
            c.true("%s: the history after the gap is long (%d blocks)" % (opt, after), after > MIN_AFTER, ctx)
            c.equal("%s: after the gap, the same blocks as under the ptrace tracer" % opt,
                    [(hex(b), hex(e)) for b, e in ref["blocks"][:after]],
                    [(hex(b), hex(e)) for b, e in got["blocks"][:after]], ctx)


if __name__ == "__main__":
    run_test("test_translate_lost_log", main)
