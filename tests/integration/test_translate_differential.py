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
signals with handlers and a SIGILL whose handler moves the pc, calls
through null and wild function pointers (faults the program recovers
from: in the cache they go through the table of indirect targets), fork and
vfork (the children detached: this client offers no fork events), an exec
of the program itself (the trace and the cache start again in the new
image; the run goes on from the exec stop as gdb does), values, watched
memory, shared memory, vector registers, an RTM transaction, the program's
own int3s, faults recovered by handlers (the other programs of
tests/programs that run alone to their end the same each time), and a
program that
rewrites a function it has run (code_rewrite, checked on its own:
check_code_rewrite), and one that unloads a shared library it ran and
loads another build of it at the same address (code_swap, checked on
its own: check_code_swap; the translator must not run the first one's
translations, and the ptrace tracer must not write the int3s it kept in
the first one into the second: it did, and the program died of SIGILL).

Threaded programs (trace_threads: three threads through shared code at
once; past_join: a thread that runs and is joined; tls_threads and
threads: short workers using thread-local storage; no_memfd: a thread
under a seccomp filter that kills at memfd_create, so btstub reads its
log through the process layer where it shares the others' in place) are
compared thread by thread, threads matched by their order of creation,
each cut to the program's own code (translate_compare.py says why).

So that the test cannot pass with the cache unused, each translate run must
say in `monitor record status` that most of its branches were logged by
translated code, and its documents must hold many blocks.

Under the sanitizers each case runs at one of the two levels, alternating
(harness.opt_levels).

Runs against btstub only (gdbserver has neither --record nor translation).

    python3 test_translate_differential.py [-v]

The recording and the checks live in translate_compare.py.
"""

from harness import opt_levels, program, run_test
from translate_compare import READ, SHARED, check_same, check_same_threads, record, record_threads, translated_share

# (program, arguments): single-threaded, deterministic control flow.
def has_xbegin():
    """Intel CPUs run xbegin (aborting where TSX is off); AMD's raise #UD."""
    with open("/proc/cpuinfo") as f:
        return not any(line.startswith("vendor_id") and "AuthenticAMD" in line for line in f)


PROGRAMS = [
    ("record_workload", ["20"]),
    ("record_walk", []),
    ("block_boundaries", []),
    ("trace_control", []),
    ("past_longjmp", []),
    ("trace_exception", []),
    ("trace_syscalls", []),
    ("trace_signals", []),
    ("forker", []),  # fork and vfork children, detached (the client offers no fork events)
    ("execer", []),  # execs itself: the trace and the cache start again in the new image
    ("null_call", []),  # calls and a tail jump to 0 and wild addresses, each fault recovered
    # The other programs of tests/programs that run to their end alone and
    # the same each time (the ones that need a client's stops, sleep for
    # signals or timers, or die, are elsewhere):
    ("past_values", []),
    ("past_hot_loop", []),
    ("past_signals", []),  # handlers, sigreturn
    ("past_watch", []),
    ("past_shared", []),  # MAP_SHARED memory written
    ("vector_regs", []),  # x87, SSE, AVX registers set and read
    ("xbegin_abort", []),  # RTM: its block is left to int3s
    ("basic", []),
    ("exit_paths", []),
    ("own_int3", []),  # the program's own int3s: SIGTRAP stops, not passed back
    ("segv_steps", []),  # faults recovered by a handler
    ("stepper", []),
]

# (program, arguments, function, fewest blocks): threads whose own code
# runs a fixed path (the C library's thread start, barriers and joins
# aside), each read where it runs the last ret of `function`, the first
# thread at the end; each thread's own code holds more than the fewest
# blocks under int3s (tls_threads and threads run short workers).
THREADED = [
    ("trace_threads", [], "worker", 1000),
    ("past_join", [], "worker", 1000),
    ("tls_threads", [], "worker", 10),
    ("threads", [], "worker", 10),
    # A seccomp filter that kills at memfd_create runs in the second
    # thread: btstub makes no memfd there and reads its log through the
    # process layer, the first thread's in place.
    ("no_memfd", [], "worker", 1000),
]
LOG_MODES = {"no_memfd": [SHARED, READ]}

# What code_rewrite prints natively, under both tracers: the translating
# tracer must drop its stale translations (a write to /proc/self/mem
# leaves the maps as they were), and the ptrace tracer must put back the
# int3s the program wrote over, and put none in a private mapping of a
# file mapped shared and writable too (an int3 there made the page the
# program's own copy, blind to the twin mapping's store and to write(2)
# to the file: "shared mapping" and "pwrite" printed the first value).
CODE_REWRITE_LINES = ["first: 1", "shared mapping: 2", "pwrite to the file: 3", "/proc/self/mem: 4",
                      "mprotect and store: 5", "stale answers: 0"]


def check_code_rewrite(c, label, ref, got):
    """code_rewrite's checks. Its branch traces are not compared block for
    block: stored history whose code changed afterwards reads as gaps
    where it was packed (decoder/block_trace.h), and which chunks were
    packed depends on timing. What a lost int3 or a stale translation
    would change is compared instead: the output, and that every call of
    the rewritten function is one block ending at its ret."""
    for run, result in (("int3", ref), ("translate", got)):
        for line in CODE_REWRITE_LINES:
            c.contains("%s: rewritten code runs as rewritten under %s (%s)" % (label, run, line),
                       result["stdout"], line)
        # The file's two mappings (the shared writable one never runs).
        mapped = [(b, e) for b, e, _, name in result["maps"] if "btstub-code-rewrite" in name]
        c.true("%s: the rewritten code's mappings are found (%s)" % (label, run), len(mapped) == 2, result["maps"])
        calls = [(b, e) for b, e in result["blocks"] if any(lo <= b < hi for lo, hi in mapped)]
        # A block may end in a gap (end 0): its history was packed and
        # the code changed since (unknown, not wrong).
        wrong = [(hex(b), hex(e)) for b, e in calls if e not in (b + 5, 0)]
        c.true("%s: under %s, calls of the rewritten function end at its ret (%d blocks)" %
               (label, run, len(calls)), len(calls) > 100 and not wrong, "wrong: %s" % wrong[:5])
    c.equal("%s: the program prints the same under both tracers" % label, ref["stdout"], got["stdout"])
    share = translated_share(got["status"])
    c.true("%s: translated code logged over half of the branches" % label,
           share is not None and share[1] > 0 and share[0] > share[1] / 2, got["status"])
    c.not_contains("%s: no complaint from the translating tracer" % label, got["stderr"], "btstub: ")


def check_code_swap(c, label, ref, got):
    """code_swap's checks: a library unloaded and another build of it
    loaded at the same address. Its history in the libraries reads as gaps
    where it was packed (their code is gone when the trace is read), so the
    output is compared: sums computed by the first library's translations
    run for the second would differ."""
    for run, result in (("int3", ref), ("translate", got)):
        c.contains("%s: the second library is loaded where the first was (%s)" % (label, run), result["stdout"],
                   "same address: yes")
        c.contains("%s: the second library's code runs under %s" % (label, run), result["stdout"],
                   "lib2: 21776700")
    c.equal("%s: the program prints the same under both tracers" % label, ref["stdout"], got["stdout"])
    share = translated_share(got["status"])
    c.true("%s: translated code logged over half of the branches" % label,
           share is not None and share[1] > 0 and share[0] > share[1] / 2, got["status"])
    c.not_contains("%s: no complaint from the translating tracer" % label, got["stderr"], "btstub: ")


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for i, (name, prog_args) in enumerate(PROGRAMS):
        if name == "xbegin_abort" and not has_xbegin():
            print("SKIP xbegin_abort: this CPU has no xbegin (it dies of SIGILL; test_xbegin_abort checks that)",
                  flush=True)
            continue
        for opt in opt_levels(i):
            prog = program(name, opt)
            label = "%s_%s" % (name, opt)
            check_same(c, label, record(prog, prog_args, "int3"), record(prog, prog_args, "translate"))
    for opt in opt_levels(0):
        prog = program("code_rewrite", opt)
        check_code_rewrite(c, "code_rewrite_" + opt, record(prog, [], "int3"), record(prog, [], "translate"))
    for opt in opt_levels(1):
        prog = program("code_swap", opt)
        check_code_swap(c, "code_swap_" + opt, record(prog, [], "int3"), record(prog, [], "translate"))
    for i, (name, prog_args, function, fewest) in enumerate(THREADED):
        for opt in opt_levels(i):
            prog = program(name, opt)
            label = "%s_%s" % (name, opt)
            check_same_threads(c, label, record_threads(prog, prog_args, "int3", function),
                               record_threads(prog, prog_args, "translate", function), min_blocks=fewest,
                               log_modes=LOG_MODES.get(name))


if __name__ == "__main__":
    run_test("test_translate_differential", main)
