#!/usr/bin/env python3
"""gdb's `record btrace pt` over btstub against `record btrace bts`: the PT
stream btstub encodes from its software trace must give gdb (which decodes
it with libipt) the very history the BTS blocks of that trace give.

1. tests/programs/record_walk.c at -O0 and -O2 (test_record_btrace's
   program), one gdb run per format over the same range (walk_begin ->
   walk_end; the program is deterministic): next/step/finish/continue while
   recording, `info record` (same count, 0 gaps; the format named),
   `record instruction-history /r` and `record function-call-history /ilc`
   over everything, reverse-stepi/-step/-next/-finish, `bt` in the past,
   `record goto begin|end|300` and `$pc` there, `record stop`, then the
   program exits normally. Every command's output must be the same under
   both formats except the lines naming the format and buffer size. At -O0
   the pt run uses plain `record btrace`, which must pick pt.
   `monitor record start` at main, then `record btrace bts|pt` (gdb adopts
   btstub's recording, which has no trace of the thread until it runs
   again): gdb names the format, reads the trace to walk_end without gaps,
   and both formats count the same instructions.
2. The tracer's fidelity programs (tests/programs/trace_*.c[c], single
   threaded) at -O0 and -O2, one run per format from main to exit()
   (trace_syscalls: to its first vDSO clock call, after which the time
   read may steer the path). Instruction and function-call histories must be
   the same, instruction for instruction, but for one documented difference:
   where a signal interrupts the thread (or ud2 faults), BTS's block ends
   on the instruction under the pc, which has not run; PT says so (FUP), so
   gdb lists that instruction there only under bts. The test requires each
   instruction only bts lists to be followed by a signal handler's first
   instruction, and counts them (trace_signals: 3 SIGUSR1, 1 SIGILL).

Against gdbserver (`--server gdbserver`) everything is skipped: gdbserver's
`record btrace` needs PT or BTS hardware, which this machine lacks.

    python3 test_record_btrace_pt.py [--server gdbserver] [-v]
"""

import re

import harness
from harness import opt_levels, program, run_gdb, run_test, stdio_target

BUFFER = 4 * 1024 * 1024
SIZES = ["set record btrace bts buffer-size %d" % BUFFER,
         "set record btrace pt buffer-size %d" % BUFFER]
INSN = re.compile(r"^(\d+)\t[ =>]*(0x[0-9a-f]+)(?: <([^>]*)>)?:", re.M)
CALL = re.compile(r"^(\d+)\t(\s*)(\S+)(?:\tinst (\d+),(\d+))?", re.M)
FORMAT_LINE = re.compile(r"^(Recording format|Buffer size):.*\n?", re.M)
PIDS = re.compile(r"\b(process|Thread) \d+(\.\d+)?")


def same_run(text):
    """What must match between the two runs: not the format's own lines,
    not the process ids."""
    return PIDS.sub(r"\1 N", FORMAT_LINE.sub("", text))


def walk_script(record):
    return SIZES + [
        "break walk_begin", "break walk_end", "continue", record,
        "next", "next", "step", "finish", "continue", "info record",
        "set record instruction-history-size unlimited",
        "set record function-call-history-size unlimited",
        "record instruction-history /r 1,1000000",
        "record function-call-history /ilc 1,1000000",
        "reverse-stepi", "reverse-step", "reverse-step", "reverse-step",
        "reverse-next", "reverse-next", "reverse-finish", "bt",
        "record goto begin", "record goto end", "record goto 300", "bt",
        "print/x $pc", "record stop", "delete", "continue"]


def count_of(text):
    m = re.search(r"Recorded (\d+) instructions in (\d+) functions \((\d+) gaps\)",
                  text or "")
    return (int(m.group(1)), int(m.group(3))) if m else (None, None)


def check_walk(c, args, opt):
    prog = program("record_walk", opt)
    pt_record = "record btrace" if opt == "O0" else "record btrace pt"
    bts = run_gdb(walk_script("record btrace bts"), prog,
                  stdio_target(args.server, prog, []), timeout=120)
    pt = run_gdb(walk_script(pt_record), prog,
                 stdio_target(args.server, prog, []), timeout=120)
    info = walk_script("").index("info record")
    c.contains("%s: bts run records as Branch Trace Store" % opt,
               bts.of(info), "Recording format: Branch Trace Store.", bts.transcript())
    c.contains("%s: %s records as Intel Processor Trace" % (opt, pt_record),
               pt.of(info), "Recording format: Intel Processor Trace.", pt.transcript())
    count, gaps = count_of(pt.of(info))
    c.true("%s: pt recorded instructions without gaps" % opt,
           count and count > 100 and gaps == 0, pt.of(info))
    for i, command in enumerate(walk_script(pt_record)):
        if command == pt_record:
            continue
        c.equal("%s: %s prints the same under pt as under bts" % (opt, command),
                same_run(bts.of(i)), same_run(pt.of(i)),
                pt.transcript() if i == len(pt.commands) - 1 else "")
    c.contains("%s: the program exits normally after pt" % opt, pt.of(-1),
               "exited normally", pt.transcript())


def check_adopted(c, args):
    """record btrace (either format) right after `monitor record start`
    adopts btstub's recording, whose trace of a thread begins only when the
    thread next runs: gdb must still learn the format and read the trace,
    and both formats must count the same instructions."""
    prog = program("record_walk", "O0")
    counts = {}
    for fmt, name in (("bts", "Branch Trace Store"), ("pt", "Intel Processor Trace")):
        commands = ["break main", "continue", "monitor record start",
                    "record btrace " + fmt, "info record", "break walk_end",
                    "continue", "info record", "record stop", "delete",
                    "monitor record stop", "continue"]
        r = run_gdb(commands, prog, stdio_target(args.server, prog, []),
                    timeout=120)
        label = "after monitor record start, record btrace " + fmt
        c.contains("%s: gdb learns the format" % label, r.of(4),
                   "Recording format: %s." % name, r.transcript())
        counts[fmt] = count_of(r.of(7))
        c.true("%s: the trace reads, without gaps" % label,
               counts[fmt][0] and counts[fmt][1] == 0, r.of(7))
        c.contains("%s: the program exits normally" % label, r.of(-1),
                   "exited normally", r.transcript())
    c.equal("after monitor record start: pt counts as bts", counts["bts"],
            counts["pt"])


def instructions(text):
    """[(number, address, symbol)] of an instruction history."""
    return [(int(n), int(a, 16), s or "") for n, a, s in INSN.findall(text or "")]


def calls(text):
    """[(indented name, first, last)] of a function-call history /ci."""
    out = []
    for n, indent, name, first, last in CALL.findall(text or ""):
        out.append((indent + name, int(first or 0), int(last or 0)))
    return out


def align(bts, pt, handlers):
    """Walks both histories; returns (bts numbers only bts lists, error).
    An instruction only bts lists must be followed there by a handler's
    first instruction."""
    only_bts = []
    i = j = 0
    while i < len(bts) and j < len(pt):
        if bts[i][1] == pt[j][1]:
            i += 1
            j += 1
            continue
        nxt = bts[i + 1][2] if i + 1 < len(bts) else ""
        if nxt in ["%s+0" % h for h in handlers]:
            only_bts.append(bts[i][0])
            i += 1
            continue
        return only_bts, "differ at bts #%d %#x <%s> / pt #%d %#x <%s>" % (
            bts[i][0], bts[i][1], bts[i][2], pt[j][0], pt[j][1], pt[j][2])
    if i != len(bts) or j != len(pt):
        return only_bts, "lengths differ: bts %d, pt %d" % (len(bts), len(pt))
    return only_bts, None


def merged(segments):
    out = []
    for name in segments:
        if not out or out[-1] != name:
            out.append(name)
    return out


# (program, where the range ends, signal handlers, signal deliveries).
# trace_syscalls stops before its vDSO clock calls: the time read steers
# gettimeofday's normalisation loop, so two runs may differ after it.
FIDELITY = [("trace_control", "exit", [], 0),
            ("trace_syscalls", "clock_gettime", [], 0),
            ("trace_exception", "exit", [], 0),
            ("trace_signals", "exit", ["on_usr1", "on_ill"], 4)]


def check_fidelity(c, args, name, opt, end, handlers, interrupted):
    prog = program(name, opt)
    label = "%s %s" % (name, opt)

    def run(fmt):
        commands = SIZES + [
            "handle SIGUSR1 nostop noprint pass",
            "handle SIGILL nostop noprint pass",
            "break main", "continue", "record btrace " + fmt, "break " + end,
            "continue", "info record",
            "set record instruction-history-size unlimited",
            "set record function-call-history-size unlimited",
            "record instruction-history /r 1,10000000",
            "record function-call-history /ci 1,10000000", "record stop",
            "delete", "continue"]
        r = run_gdb(commands, prog, stdio_target(args.server, prog, []),
                    timeout=240)
        c.contains("%s %s: stopped at %s" % (label, fmt, end), r.of(8),
                   "Breakpoint 2", r.transcript())
        return r, commands.index("info record")

    bts, i = run("bts")
    pt, _ = run("pt")
    c.contains("%s: bts records as Branch Trace Store" % label, bts.of(i),
               "Recording format: Branch Trace Store.", bts.transcript())
    c.contains("%s: pt records as Intel Processor Trace" % label, pt.of(i),
               "Recording format: Intel Processor Trace.", pt.transcript())
    bts_count, bts_gaps = count_of(bts.of(i))
    pt_count, pt_gaps = count_of(pt.of(i))
    c.true("%s: no gaps (bts %s, pt %s)" % (label, bts_gaps, pt_gaps),
           bts_gaps == 0 and pt_gaps == 0, pt.of(i))
    c.equal("%s: pt counts bts's instructions but the %d interrupted ones" %
            (label, interrupted), bts_count - interrupted if bts_count else None,
            pt_count)
    bts_insns = instructions(bts.of(i + 3))
    pt_insns = instructions(pt.of(i + 3))
    c.true("%s: a history of thousands of instructions (%d)" % (label, len(pt_insns)),
           len(pt_insns) > 1000)
    only_bts, error = align(bts_insns, pt_insns, handlers)
    c.true("%s: instruction history under pt equals bts's, instruction for "
           "instruction" % label, error is None, error or "")
    c.equal("%s: instructions only bts lists: one per signal delivery" % label,
            interrupted, len(only_bts))
    # The call history: bts's segments that hold nothing but an
    # interrupted instruction are not in pt's.
    bts_calls = [n for n, first, last in calls(bts.of(i + 4))
                 if not (first == last and first in only_bts)]
    pt_calls = [n for n, _, _ in calls(pt.of(i + 4))]
    c.true("%s: function-call history under pt equals bts's" % label,
           merged(bts_calls) == merged(pt_calls) and len(pt_calls) > 10,
           harness.unified_diff(merged(bts_calls), merged(pt_calls), "bts", "pt"))
    for fmt, r in (("bts", bts), ("pt", pt)):
        c.contains("%s %s: the program exits normally" % (label, fmt), r.of(-1),
                   "exited with code", r.transcript())


def main(args, c):
    if args.server == "gdbserver":
        print("SKIP: gdbserver's record btrace needs PT or BTS hardware")
        return
    for opt in ("O0", "O2"):
        check_walk(c, args, opt)
    check_adopted(c, args)
    for i, (name, end, handlers, interrupted) in enumerate(FIDELITY):
        for opt in opt_levels(i):
            check_fidelity(c, args, name, opt, end, handlers, interrupted)


if __name__ == "__main__":
    run_test("test_record_btrace_pt", main)
