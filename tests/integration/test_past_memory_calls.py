#!/usr/bin/env python3
"""Values in the past across brk, mmap and mprotect, which copies of the
program make again themselves (stub/process/repeated_call.h) instead of
the recording taking a checkpoint after each, across nanosleep,
clock_nanosleep (usleep) and sched_yield, whose results a copy is given,
and across the calls that stay barriers (mremap shrinking, the heap
shrunk, munmap).

past_memory_calls.c (O0 and O2) grows the heap with sbrk, then between
mark(1) and mark(3) maps anonymous memory, sleeps twice for a millisecond,
yields, makes half of the memory read-only and grows the heap again; after mark(3) it shrinks the mapping (mremap) and
the heap, maps more and (after mark 4) unmaps it. Every mark's values
depend on all the memory written before it and on the addresses the calls
returned. gdb -> `btstub --once --record` stops live at each mark (the
reference: the program itself there), probing the globals, the memory
behind them (unmapped ranges included: "Cannot access memory") and
rip/rsp/rbp/rbx/r11; then reverse-continue back to marks 4, 3, 2 and 1,
where the same probes must print exactly what they printed live. The
program makes no other system call from its first sbrk to mark 5.
`monitor record status` at mark 3 must count at least six more calls
made again by copies than at mark 1 (the status had no such count before,
and every call was a checkpoint of its own; each sleep and yield was one
until they were given), and the copies that show
marks 2 and 3 must come from a checkpoint no later than mark 1's branch
(`monitor replay status`): they made the calls themselves.

    python3 test_past_memory_calls.py [-v]
"""

import re

from harness import program, run_gdb_tcp, run_test

# printf: no value history numbers, which differ between the two visits.
PROBE = ['printf "%ld\\n", g_stage'] + ['printf "0x%%lx\\n", %s' % g for g in (
    "g_sum", "g_brk0", "g_heap", "g_heap2", "g_map", "g_shrunk", "g_map2", "g_after_unmap")] + [
         "x/2xg g_heap",
         "x/2xg g_heap + 31*512", "x/2xg g_heap + 63*512", "x/2xg g_map", "x/2xg g_map + 16*512",
         "x/2xg g_map2", "x/2xg g_heap2",
         "info registers rip rsp rbp rbx r11"]
MARKS = 5


def script():
    """The commands; for each mark the index of its live probe's first
    command and of its past probe's (none for mark 5: only live), and of
    the live record status at each mark."""
    cmds = ["break mark"]
    live, past, status = {}, {}, {}
    for m in range(1, MARKS + 1):
        cmds += ["continue", "finish"]  # back in main, after the mark's store
        live[m] = len(cmds)
        cmds += PROBE
        status[m] = len(cmds)
        cmds.append("monitor record status")
    for m in range(MARKS - 1, 0, -1):
        # From main after mark(m + 1) returned: back into mark(m + 1), back
        # into mark(m), and finish forward to main after it.
        cmds += ["reverse-continue", "reverse-continue", "finish"]
        past[m] = len(cmds)
        cmds += PROBE
        cmds.append("monitor replay status")
    return cmds, live, past, status


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    cmds, live, past, status = script()
    for opt in ("O0", "O2"):
        prog = program("past_memory_calls", opt)
        result, server = run_gdb_tcp("btstub", prog, [], cmds, options=("--once", "--record"))
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        for m in range(1, MARKS + 1):
            c.equal("%s: live at mark %d" % (opt, m), str(m), result.of(live[m]).strip(), ctx)

        def made(m):
            found = re.search(r"(\d+) system calls copies make again", result.of(status[m]))
            return int(found.group(1)) if found else None

        c.true("%s: the mmap, sleeps, yield, mprotect and brk between marks 1 and 3 are for copies (%s, %s)" %
               (opt, made(1), made(3)), made(1) is not None and made(3) is not None and made(3) - made(1) >= 6,
               context=ctx)
        at_mark1 = re.search(r"thread \d+: (\d+) of \d+ branches", result.of(status[1]))
        for m in range(1, MARKS):
            c.equal("%s: back at mark %d" % (opt, m), str(m), result.of(past[m]).strip(), ctx)
            for i, cmd in enumerate(PROBE):
                c.equal("%s: mark %d in the past, %s" % (opt, m, cmd), result.of(live[m] + i),
                        result.of(past[m] + i), ctx)
            replay = result.of(past[m] + len(PROBE))
            c.contains("%s: mark %d comes from a copy" % (opt, m), replay, "from a copy", ctx)
            if m in (2, 3):
                started = re.search(r"re-run from the checkpoint at branch (\d+)", replay)
                c.true("%s: mark %d's copy started before mark 1 and made the calls itself" % (opt, m),
                       started is not None and at_mark1 is not None and
                       int(started.group(1)) <= int(at_mark1.group(1)), context=ctx)


if __name__ == "__main__":
    run_test("test_past_memory_calls", main)
