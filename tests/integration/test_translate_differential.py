#!/usr/bin/env python3
"""The translating tracer records exactly what the ptrace tracer records.

Each program below runs twice under `btstub --record`, once with
`--trace-stops=int3` (the ptrace tracer, the reference) and once with
`--trace-stops=translate` (translated code in a cache in the program logs
the branches; docs/backends.md "The translating tracer"), at -O0 and -O2.
Both runs go from the first instruction to the stop btstub makes before
the program exits (signals the program gets are passed back to it); then
the whole branch trace is read as gdb reads it (Qbtrace:bts adopts the
recording, qXfer:btrace:read:all) and the two must hold the same blocks,
hence the same taken branches in the same order, and the runs the same
stops. Blocks in the vDSO are left out of the comparison: its clock reads
retry when the kernel updates the time meanwhile, which differs from run
to run whichever tracer records (both run the vDSO under int3s).

The programs cover loops, calls and returns, calls through function
pointers, a jump table, recursion, setjmp/longjmp, a C++ throw and catch
(the unwinder reads the return addresses the translations push), system
calls and vDSO calls (which fall back to the ptrace tracer), raised
signals with handlers and a SIGILL whose handler moves the pc.

Threaded programs (trace_threads: three threads through shared code at
once; past_join: a thread that runs and is joined) are compared thread by
thread, threads matched by their order of creation, each cut to the
program's own code (translate_compare.py says why).

So that the test cannot pass with the cache unused, each translate run must
say in `monitor record status` that most of its branches were logged by
translated code, and its documents must hold many blocks.

Runs against btstub only (gdbserver has neither --record nor translation).

    python3 test_translate_differential.py [-v]

The recording and the checks live in translate_compare.py.
"""

from harness import program, run_test
from translate_compare import check_same, check_same_threads, record, record_threads

# (program, arguments): single-threaded, deterministic control flow.
PROGRAMS = [
    ("record_workload", ["20"]),
    ("record_walk", []),
    ("block_boundaries", []),
    ("trace_control", []),
    ("past_longjmp", []),
    ("trace_exception", []),
    ("trace_syscalls", []),
    ("trace_signals", []),
]

# (program, arguments, function): threads whose own code runs a fixed path
# (the C library's thread start, barriers and joins aside), each read where
# it runs the last ret of `function`, the first thread at the end.
THREADED = [
    ("trace_threads", [], "worker"),
    ("past_join", [], "worker"),
]


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for name, prog_args in PROGRAMS:
        for opt in ("O0", "O2"):
            prog = program(name, opt)
            label = "%s_%s" % (name, opt)
            check_same(c, label, record(prog, prog_args, "int3"), record(prog, prog_args, "translate"))
    for name, prog_args, function in THREADED:
        for opt in ("O0", "O2"):
            prog = program(name, opt)
            label = "%s_%s" % (name, opt)
            check_same_threads(c, label, record_threads(prog, prog_args, "int3", function),
                               record_threads(prog, prog_args, "translate", function))


if __name__ == "__main__":
    run_test("test_translate_differential", main)
