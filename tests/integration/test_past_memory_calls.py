#!/usr/bin/env python3
"""Values in the past across brk, mmap, mprotect, mremap and munmap, which
copies of the program make again themselves (stub/process/repeated_call.h)
instead of the recording taking a checkpoint after each.

past_memory_calls.c (O0 and O2) grows the heap with sbrk, maps anonymous
memory, makes half of it read-only, shrinks it in place (mremap), shrinks
the heap, maps more and unmaps it, calling mark(1..5) in between; every
mark's values depend on all the memory written before it and on the
addresses the calls returned. gdb -> `btstub --once --record` stops live at
each mark (the reference: the program itself there), probing the globals,
the memory behind them (unmapped ranges included: "Cannot access memory"),
and rip/rsp/rbp/rbx; then reverse-continue back to marks 4, 3, 2 and 1,
where the same probes must print exactly what they printed live. The
program makes no other system call from its first sbrk to mark 5, so a
copy reaches each mark only by making those calls itself: `monitor record
status` must count at least the program's eight of them as made again by
copies (the status line had no such count before, and every call was a
checkpoint of its own), and the past must come from a copy.

    python3 test_past_memory_calls.py [-v]
"""

import re

from harness import program, run_gdb_tcp, run_test

# printf: no value history numbers, which differ between the two visits.
PROBE = ['printf "%ld\\n", g_stage'] + ['printf "0x%%lx\\n", %s' % g for g in (
    "g_sum", "g_brk0", "g_heap", "g_map", "g_shrunk", "g_map2", "g_after_unmap")] + [
         "x/2xg g_heap",
         "x/2xg g_heap + 31*512", "x/2xg g_heap + 63*512", "x/2xg g_map", "x/2xg g_map + 16*512",
         "x/2xg g_map2", "info registers rip rsp rbp rbx"]
MARKS = 5


def script():
    """The commands, and for each mark the index of its live probe's first
    command and of its past probe's (None for mark 5: only live)."""
    cmds = ["break mark"]
    live, past = {}, {}
    for m in range(1, MARKS + 1):
        cmds += ["continue", "finish"]  # back in main, after the mark's store
        live[m] = len(cmds)
        cmds += PROBE
    status_at = len(cmds)
    cmds.append("monitor record status")
    for m in range(MARKS - 1, 0, -1):
        # From main after mark(m + 1) returned: back into mark(m + 1), back
        # into mark(m), and finish forward to main after it.
        cmds += ["reverse-continue", "reverse-continue", "finish"]
        past[m] = len(cmds)
        cmds += PROBE
        cmds.append("monitor replay status")
    return cmds, live, past, status_at


def main(args, c):
    if args.server != "btstub":
        print("SKIP: btstub's own recording")
        return
    cmds, live, past, status_at = script()
    for opt in ("O0", "O2"):
        prog = program("past_memory_calls", opt)
        result, server = run_gdb_tcp("btstub", prog, [], cmds, options=("--once", "--record"))
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        for m in range(1, MARKS + 1):
            c.equal("%s: live at mark %d" % (opt, m), str(m), result.of(live[m]).strip(), ctx)
        status = result.of(status_at)
        made = re.search(r"(\d+) system calls copies make again", status)
        c.true("%s: the program's eight memory calls are made again by copies, not checkpointed" % opt,
               made is not None and int(made.group(1)) >= 8, context=ctx)
        for m in range(1, MARKS):
            c.equal("%s: back at mark %d" % (opt, m), str(m), result.of(past[m]).strip(), ctx)
            for i, cmd in enumerate(PROBE):
                c.equal("%s: mark %d in the past, %s" % (opt, m, cmd), result.of(live[m] + i),
                        result.of(past[m] + i), ctx)
            c.contains("%s: mark %d comes from a copy" % (opt, m), result.of(past[m] + len(PROBE)),
                       "from a copy", ctx)


if __name__ == "__main__":
    run_test("test_past_memory_calls", main)
