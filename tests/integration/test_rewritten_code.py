#!/usr/bin/env python3
"""Code the program stores into and runs, with no system call in between.

rewritten_code.c (O0, O2): an anonymous read-write-execute page rewritten
between five rounds of 200 calls, an anonymous page made writable,
written and made executable again between two rounds, then the program's own code made
writable once and an immediate of patched() rewritten between rounds of
200 calls. Recorded from the first instruction under `--record` with
both tracers (`--trace-stops=int3` and `translate`: the translating
tracer leaves such code to the ptrace tracer):

- the program prints what it prints natively;
- the history is whole and exact: each call into a page is one block
  from the page to its ret (1,000 and 400), each call of patched() one block to
  its ret (1,000), and no block of the run is a gap. Before, the ptrace
  tracer put int3s there, the program's stores overwrote them and the
  returns ran unseen (blocks from the page to the call in call_often),
  and branches packed as PT over code that changed later read as gaps;
- the past after the rewrites (a helper's review session): stopped live
  at the `patch 3` line (k == 2), `next`, four `reverse-step`s into
  printf's end and `reverse-finish`: main's frame is at that line with
  k and value as live, read from a copy of the program. (In the review's
  run of a program like this one a copy re-ran across a gap and stopped
  at an earlier pass of the pc, the frame of an earlier printf; where the
  gaps fall depends on timing: test_history_visits has the counting.)
  And `reverse-continue` from there walks back to the first instruction:
  the rewrites changed immediates, not the layout of the blocks that ran
  (test_replay_cursor: a block that ran another layout is where history
  begins).

- the past of a memfd mapped three times (code stored through a writable
  view and run through an executable one, a count read through a
  read-only view): stopped live at round 3's printf, `next` and
  `reverse-next`: the result, the count and the round as live, read from a
  copy. Before, a copy held each view as memory of its own: its re-run
  stored the code into one and ran stale code in the other, and the
  values were refused ("another process wrote memory the program shares").
  And a copy forked from a checkpoint to re-run holds views of its own
  (else the check's re-run would have counted in the checkpoint, and the
  read's re-run seen 4). A third count lives in a page of the memfd
  64 GiB further on, mapped on its own: in the past it reads as live (3);
  a copy that made one object of both stretches could not map it (no
  overcommit past RAM here) and had no copy at all.

    python3 test_rewritten_code.py [-v]
"""

import re

from harness import marker_line, program, run_gdb_tcp, run_test
from translate_compare import record

ROUNDS, CALLS = 5, 200
MEMFD_ROUNDS = 3
NATIVE = (["jit round %d: %d" % (r, r) for r in range(1, ROUNDS + 1)] +
          ["wx round %d: %d" % (r, 10 * r) for r in (1, 2)] +
          ["patch %d: %d" % (k, 200 if k % 2 == 0 else 400) for k in range(5)] +
          ["memfd round %d: %d seen %d" % (r, 100 * r, r) for r in range(1, MEMFD_ROUNDS + 1)])


def check_history(c, label, run):
    out = run["stdout"]
    for line in NATIVE:
        c.contains("%s: prints %r as natively" % (label, line), out, line)
    found = re.search(r"jit (0x[0-9a-f]+) wx (0x[0-9a-f]+) patched (0x[0-9a-f]+)", out)
    c.true("%s: the program says where its code is" % label, found is not None, out)
    if not found:
        return
    jit, wx, patched = (int(found.group(i), 16) for i in (1, 2, 3))
    blocks = run["blocks"]
    for page, name, rounds in ((jit, "the written page", ROUNDS), (wx, "the W^X page", 2)):
        calls = [end for begin, end in blocks if begin == page]
        c.equal("%s: every call into %s is in the history" % (label, name), rounds * CALLS, len(calls))
        c.true("%s: each ends at %s's ret" % (label, name), all(end == page + 5 for end in calls),
               sorted(set(hex(e) for e in calls))[:5])
    patched_calls = [end for begin, end in blocks if begin == patched]
    c.equal("%s: every call of the patched function is in the history" % label, ROUNDS * CALLS,
            len(patched_calls))
    c.true("%s: each ends at one ret" % label, len(set(patched_calls)) == 1,
           sorted(set(hex(e) for e in patched_calls))[:5])
    found = re.search(r"memfd rw (0x[0-9a-f]+) rx (0x[0-9a-f]+)", out)
    c.true("%s: the program says where the memfd's views are" % label, found is not None, out)
    if found:
        rx = int(found.group(2), 16)
        calls = [end for begin, end in blocks if begin == rx]
        c.equal("%s: every call into the memfd's executable view is in the history" % label, MEMFD_ROUNDS,
                len(calls))
        c.true("%s: each ends at its ret" % label, all(end == rx + 5 for end in calls),
               sorted(set(hex(e) for e in calls)))
    gaps = [(hex(b), hex(e)) for b, e in blocks if b == 0 or e == 0 or e < b]
    c.true("%s: no gap in the history (%d blocks)" % (label, len(blocks)), not gaps, gaps[:5])


def check_past(c, label, prog, mode):
    line = marker_line("rewritten_code.c", "patched_call")
    commands = ["break %d if k == 2" % line, "continue",                  # 0-1: live, at `patch 3`
                "print k", "print value",                                 # 2-3
                "next",                                                   # 4
                "reverse-step", "reverse-step", "reverse-step", "reverse-step",
                "reverse-finish", "bt",                                   # 9-10
                "frame function main", "print k", "print value",          # 11-13
                "monitor replay status",                                  # 14
                "delete", "reverse-continue", "info registers rip"]       # 15-17
    result, server = run_gdb_tcp("btstub", prog, [], commands,
                                 options=("--once", "--record", "--trace-stops=" + mode))
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr[-3000:]
    c.contains("%s: stopped live at the patch 3 line" % label, result.of(1), "rewritten_code.c:%d" % line, ctx)
    c.matches("%s: back in the frame that called printf there" % label, result.of(10),
              r"#1 .*main \(\) at .*rewritten_code\.c:%d" % line, ctx)
    for live, past, name in ((2, 12, "k"), (3, 13, "value")):
        value = result.of(live).strip()
        c.true("%s: %s read live" % (label, name), value.startswith("$"), ctx)
        c.equal("%s: %s in the past as live" % (label, name), value.split("=", 1)[-1].strip(),
                result.of(past).strip().split("=", 1)[-1].strip(), ctx)
    c.contains("%s: the values come from a copy of the program" % label, result.of(14), "from a copy", ctx)
    # The rewrites kept each block's layout (an immediate changed): replay
    # walks back over the old rounds to the program's first instruction.
    c.contains("%s: back to the start of history" % label, result.of(16), "No more reverse-execution history", ctx)
    c.contains("%s: ... the program's first instruction" % label, result.of(17), "<_start>", ctx)


def check_memfd_past(c, label, prog, mode):
    line = marker_line("rewritten_code.c", "memfd_print")
    commands = ["break %d if memfd_round == 3" % line, "continue",             # 0-1: live, round 3's printf
                "print memfd_got", "print *memfd_seen", "print memfd_round",   # 2-4
                "next", "reverse-next", "info line *$pc",                      # 5-7
                "print memfd_got", "print *memfd_seen", "print memfd_round",   # 8-10
                "monitor replay status", "print *memfd_far"]                   # 11-12
    result, server = run_gdb_tcp("btstub", prog, [], commands,
                                 options=("--once", "--record", "--trace-stops=" + mode))
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr[-3000:]
    c.contains("%s: stopped live at round 3's printf" % label, result.of(1), "rewritten_code.c:%d" % line, ctx)
    c.contains("%s: back at that line in the past" % label, result.of(7), "Line %d" % line, ctx)
    for live, past, name, value in ((2, 8, "memfd_got", "300"), (3, 9, "*memfd_seen", "3"), (4, 10, "memfd_round", "3")):
        c.equal("%s: %s read live" % (label, name), value, result.of(live).strip().split("= ", 1)[-1], ctx)
        c.equal("%s: %s in the past as live" % (label, name), value, result.of(past).strip().split("= ", 1)[-1], ctx)
    c.contains("%s: the values come from a copy of the program" % label, result.of(11), "from a copy", ctx)
    # The page 64 GiB into the memfd, mapped on its own: its own object in
    # a copy (one spanning both could not be mapped: no copy at all).
    c.equal("%s: *memfd_far in the past as live" % label, "3", result.of(12).strip().split("= ", 1)[-1], ctx)


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        prog = program("rewritten_code", opt)
        for mode in ("int3", "translate"):
            label = "%s, --trace-stops=%s" % (opt, mode)
            check_history(c, label, record(prog, [], mode))
            check_past(c, label, prog, mode)
            check_memfd_past(c, label, prog, mode)


if __name__ == "__main__":
    run_test("test_rewritten_code", main)
