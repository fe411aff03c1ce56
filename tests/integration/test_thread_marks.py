#!/usr/bin/env python3
"""Every thread's breakpoint hits are reported while btstub records.

tests/programs/thread_marks.c starts eight threads together; thread k
calls mark(k, i) at i = 99999, 199999, ... below 400000 + 20000 * k: four
hits for k < 5, five for the others, thirty-five in all (the int3
tracer's run at a twentieth of that period: i = 4999, 9999, ... below
20000 + 1000 * k). gdb puts a dprintf on mark's first instruction (printing k and i from rdi and rsi) and
continues to the exit. Each (k, i) must be printed exactly once: under
gdbserver (the reference), btstub without recording, and btstub under
`--record` with the translating tracer (three runs, one under the
sanitizers: which threads meet at one stop varies) and with
`--trace-stops=int3` (not under the sanitizers: too slow there).

Under `--record` hits were lost: a thread the tracer had moved onto
mark's address (out of its code cache) while every thread was being
stopped, restarted later with the all-stop's SIGSTOP still queued, stood
there again, unrun, and its next start stepped off the breakpoint as if
it had hit it (hits per thread 3,3,2,4,4,5,5,5 where 4,4,4,4,4,5,5,5).
And so did one the tracer had moved onto mark's address and resumed at
once (no all-stop under way yet), stopped by the all-stop's SIGSTOP
before it ran anything: about every second run lost one to five hits on
an AMD EPYC VM, where a ptrace stop is slower.

    python3 test_thread_marks.py [-v]
"""

import collections
import re
import shlex

from harness import program, run_gdb, run_test, sanitized, server_path, stdio_target

THREADS = 8
HIT = re.compile(r"^HIT (\d+) (\d+)$", re.M)


# The loop's period (thread_marks.c) and the sum the program prints then.
PERIOD, SUM = 100000, 2675999451581
# The int3 tracer stops at about every iteration: 3.6 M stops at the full
# period, 40-100 us each on some VMs (a bare PTRACE_SINGLESTEP round trip
# takes 40 us on an AMD EPYC VM here): past gdb's timeout. A twentieth of it.
INT3_PERIOD, INT3_SUM = 5000, 6690045581


def expected(period=PERIOD):
    return sorted((k, i) for k in range(THREADS)
                  for i in range(period - 1, 4 * period + period // 5 * k, period))


def hits(target, prog):
    result = run_gdb(['dprintf *mark,"HIT %ld %ld\\n",$rdi,$rsi', "continue"], prog,
                     target=target, markers=False)
    got = sorted((int(k), int(i)) for k, i in HIT.findall(result.output))
    return got, result.output


def per_thread(got):
    counts = collections.Counter(k for k, _ in got)
    return [counts.get(k, 0) for k in range(THREADS)]


def main(args, c):
    prog = program("thread_marks", "O2")
    full = (PERIOD, SUM)
    runs = [("gdbserver", stdio_target("gdbserver", prog, [str(THREADS)]), full)]
    if args.server == "btstub":
        btstub = server_path("btstub")
        runs.append(("btstub", stdio_target("btstub", prog, [str(THREADS)]), full))
        # One under the sanitizers: each run stops forty times.
        for n in range(1 if sanitized() else 3):
            runs.append(("btstub --record, run %d" % (n + 1),
                         "| " + shlex.join([btstub, "--record", "-", prog, str(THREADS)]), full))
        # Too slow for gdb's timeout under the sanitizers even so.
        if not sanitized():
            runs.append(("btstub --record --trace-stops=int3",
                         "| " + shlex.join([btstub, "--record", "--trace-stops=int3", "-", prog, str(THREADS),
                                            str(INT3_PERIOD)]), (INT3_PERIOD, INT3_SUM)))
    for name, target, (period, total) in runs:
        want = expected(period)
        got, output = hits(target, prog)
        c.equal("%s: hits per thread" % name, per_thread(want), per_thread(got), output[-3000:])
        c.equal("%s: each (thread, i) once" % name, want, got, output[-3000:])
        # Under --record btstub holds the program at its exit_group.
        c.true("%s: the program ran to its end" % name,
               "exited normally" in output or "_exit (" in output, "", output[-3000:])
        c.contains("%s: the program's sum" % name, output, "sum %d" % total, output[-3000:])


if __name__ == "__main__":
    run_test("test_thread_marks", main)
