#!/usr/bin/env python3
"""gdb's `record btrace` over btstub (software branch tracer), checked
against gdb's own `record full` as the reference, on
tests/programs/record_walk.c at -O0 and -O2.

One gdb script is run twice on the same program:
  * against the server under test with `record btrace bts` (the pt format
    is compared with this one by test_record_btrace_pt), and
  * natively (`gdb -batch` with `run`, gdb itself single-stepping) with
    `record full` over the same range (walk_begin -> walk_end).
Checked: continue / next / step / finish while recording; `info record`
counts equal; the whole instruction history equals the pcs `record full`
replays with stepi, instruction for instruction; the function-call history
(/c) equals the call structure of that replay; `record instruction-history
/m` shows source; reverse-stepi / reverse-step / reverse-next /
reverse-finish / reverse-continue to a breakpoint in the past and
`record goto begin|end|N` land where `record full` lands; `record stop`,
then the program runs to its normal exit.

Counting: a BTS trace's newest block ends at the thread's current pc, so
gdb's btrace history holds the current instruction as its last entry; gdb
13 leaves that entry out both of "Recorded N instructions" (`info record`)
and of `record instruction-history` (it has not run yet). `record full`'s
"Log contains N instructions" counts executed instructions only. So for an
exact trace the two counts are equal and the history lists exactly the N
pcs that `record full`'s replay steps through (checked: "numbered 1..N",
"instruction for instruction"). Instruction numbers differ by one between
the two: record full calls the state before its first instruction 0,
btrace calls that instruction 1; `record goto N` is compared accordingly.
Errors: a second `record btrace bts` or `record btrace pt` gives gdb's
"already being recorded" error; plain `record btrace` picks pt.
At -O2 the btrace run is repeated with `--trace-stops=debugreg` (a debug
register at each block end instead of int3s) where `btstub --probe` says
debug registers trap, and says SKIP elsewhere.

Against gdbserver (`--server gdbserver`, where `record btrace` cannot work
on this machine without PT/BTS hardware) the same `record full` script runs
through gdbserver instead and must match the native run: that proves the
reference itself is independent of the server.

    python3 test_record_btrace.py [--server gdbserver] [-v]
"""

import re
import shlex

import harness
from harness import program, run_command, run_gdb, run_test, server_path, \
    source_line, stdio_target

SOURCE = "record_walk.c"
GOTO_N = 300
INSN_LINE = re.compile(r"^(\d+)\t[ >]*(0x[0-9a-f]+) <", re.M)
# Python run inside gdb: step through a replay from its start and print, per
# instruction, its pc, function and stack depth (frames), one line each.
WALK_REPLAY = (
    "python exec(\"def depth():\\n"
    "  f=gdb.newest_frame(); d=0\\n"
    "  while f is not None:\\n"
    "    d+=1; f=f.older()\\n"
    "  return d\\n"
    "for i in range(%d):\\n"
    "  f=gdb.newest_frame()\\n"
    "  print('STEP %%d %%#x %%s %%d' %% (i+1, f.pc(), f.name(), depth()))\\n"
    "  gdb.execute('stepi', to_string=True)\\n\")")


def script(mode, first):
    """The shared script; mode is 'btrace' or 'full', first 'run' or 'continue'."""
    s = harness.Script()
    ix = {}
    ix["break_begin"] = s.add("break walk_begin")
    s.add("break walk_end")
    if first == "continue":
        # Over the remote protocol gdb lets the server step whole line
        # ranges (vCont;r) during `next`, and record full then misses those
        # instructions; btstub does not offer range stepping anyway.
        s.add("set range-stepping off")
    ix["first"] = s.add(first)
    ix["record"] = s.add("record " + ("btrace bts" if mode == "btrace" else mode))
    ix["next1"] = s.add("next")
    ix["next2"] = s.add("next")
    ix["step"] = s.add("step")
    ix["finish"] = s.add("finish")
    ix["continue"] = s.add("continue")
    ix["info"] = s.add("info record")
    if mode == "btrace":
        s.add("set record instruction-history-size unlimited")
        ix["ihist"] = s.add("record instruction-history 1,100000")
        ix["ihist_m"] = s.add("record instruction-history /m 1,6")
        ix["fhist"] = s.add("record function-call-history /c 1,100000")
    ix["rstepi1"] = s.add("reverse-stepi")
    ix["rstepi2"] = s.add("reverse-stepi")
    ix["rsteps"] = [s.add("reverse-step") for _ in range(6)]
    ix["rnexts"] = [s.add("reverse-next") for _ in range(2)]
    ix["rfinish"] = s.add("reverse-finish")
    s.add("break depth")
    ix["rcont"] = s.add("reverse-continue")
    ix["bt_past"] = s.add("bt")
    ix["goto_begin"] = s.add("record goto begin")
    ix["goto_end"] = s.add("record goto end")
    # record full numbers the state before its first instruction 0, btrace
    # numbers that instruction 1: the same point is N-1 there.
    ix["goto_n"] = s.add("record goto %d" % (GOTO_N if mode == "btrace" else GOTO_N - 1))
    ix["goto_n_bt"] = s.add("bt")
    ix["goto_n_pc"] = s.add("print/x $pc")
    ix["goto_begin2"] = s.add("record goto begin")
    ix["walk"] = s.add("%WALK%")
    ix["stop"] = s.add("record stop")
    s.add("delete")
    ix["exit"] = s.add("continue")
    return s.commands, ix


def fill_walk(commands, count):
    walk = WALK_REPLAY % count
    return [walk if c == "%WALK%" else c for c in commands]


def strip_values(text):
    """Drops what btrace cannot know and record full can: argument values,
    gdb's "Go backward" note, pc prefixes of frame lines."""
    out = []
    for line in (text or "").splitlines():
        if line.startswith("Go backward to insn number") or \
           line.startswith("Go forward to insn number"):
            continue
        # btrace's replay unwinder knows only the frames the trace saw enter.
        if line.startswith("Backtrace stopped: not enough registers"):
            continue
        line = re.sub(r"\(([^()]|\([^()]*\))*\)", "()", line)
        out.append(line)
    return "\n".join(out)


def recorded_count(c, label, text):
    m = re.search(r"Recorded (\d+) instructions in (\d+) functions \((\d+) gaps\)",
                  text or "")
    if not m:
        m = re.search(r"Log contains (\d+) instructions", text or "")
    c.true("%s: info record gives a count" % label, m, text)
    return int(m.group(1)) if m else None


def replay_walk(text):
    """[(pc, function, depth)] from the WALK_REPLAY output."""
    steps = []
    for m in re.finditer(r"^STEP (\d+) (0x[0-9a-f]+) (\S+) (\d+)$", text or "", re.M):
        steps.append((int(m.group(2), 16), m.group(3), int(m.group(4))))
    return steps


def call_structure(steps):
    """Function segments as btrace's /c history shows them: a new segment
    whenever the function or the stack depth changes; indentation relative
    to the shallowest segment."""
    segments = []
    for _, name, depth in steps:
        if not segments or segments[-1] != (name, depth):
            segments.append((name, depth))
    if not segments:
        return []
    low = min(d for _, d in segments)
    return ["  " * (d - low) + n for n, d in segments]


def btrace_calls(text):
    out = []
    for line in (text or "").splitlines():
        m = re.match(r"^\d+\t(\s*)(\S+)", line)
        if m:
            out.append(m.group(1) + m.group(2))
    return out


def run_script(kind, prog, mode, count=None, options=()):
    first = "run" if kind == "native" else "continue"
    commands, ix = script(mode, first)
    commands = fill_walk(commands, count or 0)
    target = None if kind == "native" else \
        "| " + shlex.join([server_path(kind)] + list(options) + ["-", prog])
    return run_gdb(commands, prog, target, timeout=120), ix


def debug_registers_trap(kind):
    status, out, _ = run_command([server_path(kind), "--probe"], 15)
    return status == 0 and "debug registers: trap" in out


def check_reference_run(c, opt, ref, ix):
    c.contains("%s reference: record full started at walk_begin" % opt,
               ref.of(ix["first"]), source_line(SOURCE, "begin_body"),
               ref.transcript())
    c.contains("%s reference: reached the exit" % opt, ref.of(ix["exit"]),
               "exited normally", ref.transcript())


def compare_with_reference(c, opt, test, tix, ref, rix, label):
    """Commands whose output must be the same (argument values aside)."""
    names = ["next1", "next2", "step", "finish", "continue", "rstepi1",
             "rstepi2", "rfinish", "rcont", "bt_past", "goto_begin",
             "goto_end", "goto_n", "goto_n_bt", "goto_n_pc"]
    for name in names:
        c.equal("%s %s: %s as under record full" % (opt, label, name),
                strip_values(ref.of(rix[name])),
                strip_values(test.of(tix[name])), test.transcript())
    for key in ("rsteps", "rnexts"):
        ref_lines = [strip_values(ref.of(i)) for i in rix[key]]
        test_lines = [strip_values(test.of(i)) for i in tix[key]]
        c.equal("%s %s: lines %s visits as under record full" %
                (opt, label, key), "\n".join(ref_lines), "\n".join(test_lines))
    c.contains("%s %s: record stop" % (opt, label), test.of(tix["stop"]),
               "Process record is stopped")
    c.contains("%s %s: program exits normally afterwards" % (opt, label),
               test.of(tix["exit"]), "exited normally", test.transcript())


def check_btrace_only(c, opt, test, ix, ref_steps, ref_count):
    c.not_contains("%s: record btrace accepted" % opt, test.of(ix["record"]),
                   "rror")
    info = test.of(ix["info"])
    c.contains("%s: info record says Branch Trace Store" % opt, info,
               "Recording format: Branch Trace Store.")
    c.equal("%s: info record count equals record full's" % opt, ref_count,
            recorded_count(c, opt + " btrace", info), test.transcript())
    c.matches("%s: no gaps" % opt, info, r"\(0 gaps\)")

    hist = [(int(n), int(pc, 16)) for n, pc in INSN_LINE.findall(test.of(ix["ihist"]))]
    numbers = [n for n, _ in hist]
    c.equal("%s: instruction history numbered 1..N" % opt,
            list(range(1, (ref_count or 0) + 1)), numbers)
    ref_pcs = ["%#x" % pc for pc, _, _ in ref_steps]
    test_pcs = ["%#x" % pc for _, pc in hist]
    c.true("%s: instruction history equals record full's replay, "
           "instruction for instruction" % opt,
           ref_pcs == test_pcs and len(ref_pcs) == ref_count,
           harness.unified_diff(ref_pcs, test_pcs, "record full", "btrace"))
    bp = re.search(r"Breakpoint \d+ at (0x[0-9a-f]+)", test.of(ix["break_begin"]))
    c.true("%s: history starts at the breakpoint's pc" % opt,
           bp and hist and hist[0][1] == int(bp.group(1), 16),
           test.of(ix["ihist"])[:400])

    c.contains("%s: instruction-history /m shows the source line" % opt,
               test.of(ix["ihist_m"]), "record_walk.c:%d\t%s" % (
                   harness.marker_line(SOURCE, "main_sum"),
                   source_line(SOURCE, "main_sum").split("\t", 1)[1]))
    goto_pc = re.search(r"= (0x[0-9a-f]+)", test.of(ix["goto_n_pc"]))
    c.true("%s: record goto %d is at instruction %d of the history" %
           (opt, GOTO_N, GOTO_N),
           goto_pc and len(hist) >= GOTO_N and
           int(goto_pc.group(1), 16) == hist[GOTO_N - 1][1],
           test.of(ix["goto_n_pc"]))
    expected_calls = call_structure(ref_steps)
    actual_calls = btrace_calls(test.of(ix["fhist"]))
    c.true("%s: function-call-history /c equals record full's call structure"
           % opt, expected_calls == actual_calls,
           harness.unified_diff(expected_calls, actual_calls, "record full",
                                "btrace"))
    c.contains("%s: function-call-history includes the function pointer "
               "callees" % opt, "\n".join(actual_calls), "    square")


def check_opt(c, args, opt):
    prog = program("record_walk", opt)
    # First pass learns the count; the walk needs it.
    probe, pix = run_script("native", prog, "full")
    ref_count = recorded_count(c, opt + " reference", probe.of(pix["info"]))
    if ref_count is None:
        return
    ref, rix = run_script("native", prog, "full", ref_count)
    check_reference_run(c, opt, ref, rix)
    ref_steps = replay_walk(ref.of(rix["walk"]))
    c.equal("%s reference: replay walked every instruction" % opt, ref_count,
            len(ref_steps), ref.of(rix["walk"])[-2000:])
    if harness.VERBOSE:
        print(ref.transcript())

    if args.server == "gdbserver":
        remote, xix = run_script("gdbserver", prog, "full", ref_count)
        c.equal("%s: record full through gdbserver counts as natively" % opt,
                ref_count, recorded_count(c, opt + " gdbserver",
                                          remote.of(xix["info"])))
        c.equal("%s: same replay through gdbserver" % opt, ref_steps,
                replay_walk(remote.of(xix["walk"])))
        compare_with_reference(c, opt, remote, xix, ref, rix, "gdbserver")
        print("SKIP %s: record btrace needs btstub's software tracer" % opt)
        return

    test, tix = run_script(args.server, prog, "btrace", ref_count)
    check_btrace_only(c, opt, test, tix, ref_steps, ref_count)
    compare_with_reference(c, opt, test, tix, ref, rix, "btrace")
    if opt != "O2":
        return
    # The other way of stopping at block ends, where the machine has it: a
    # debug register per block instead of int3s (gdb's steps onto and over
    # an armed call once recorded that call twice here).
    if not debug_registers_trap(args.server):
        print("SKIP %s --trace-stops=debugreg: debug registers never trap here" % opt)
        return
    label = opt + " debugreg"
    test, tix = run_script(args.server, prog, "btrace", ref_count,
                           ["--trace-stops=debugreg"])
    check_btrace_only(c, label, test, tix, ref_steps, ref_count)
    compare_with_reference(c, label, test, tix, ref, rix, "btrace")
    # The replay walk through btrace's history must agree with record full's
    # as well (pc, function and unwound depth at every instruction).
    c.equal("%s: stepping through the btrace replay visits the same pcs" % opt,
            [s[0] for s in ref_steps],
            [s[0] for s in replay_walk(test.of(tix["walk"]))])


def check_errors(c, args):
    """record btrace pt is accepted like bts; a second record btrace (either
    format) gives gdb's "already" error; plain record btrace picks pt;
    record stop and a new record btrace start from an empty trace."""
    if args.server == "gdbserver":
        print("SKIP errors: gdbserver cannot trace branches on this machine")
        return
    prog = program("record_walk", "O0")
    commands = ["break walk_begin", "continue", "record btrace pt",
                "info record", "record stop", "record btrace bts",
                "record btrace bts", "record btrace pt", "next",
                "info record", "record stop", "record btrace", "info record",
                "record stop", "delete", "continue"]
    r = run_gdb(commands, prog, stdio_target(args.server, prog, []))
    c.equal("record btrace pt: accepted silently", "", r.of(2).strip(),
            r.transcript())
    c.contains("record btrace pt: recording in Intel PT format", r.of(3),
               "Recording format: Intel Processor Trace.")
    c.contains("record stop after pt", r.of(4), "Process record is stopped")
    c.equal("record btrace bts: accepted silently", "", r.of(5).strip())
    for i in (6, 7):
        c.contains("%s while recording: gdb's already error" % commands[i],
                   r.of(i), 'The process is already being recorded.  Use '
                   '"record stop" to stop recording first.')
    count = recorded_count(c, "after next", r.of(9))
    c.true("recording went on through the failed attempts (count > 0)",
           count and count > 0, r.of(9))
    c.contains("still bts after the failed attempts", r.of(9),
               "Recording format: Branch Trace Store.")
    c.contains("record stop", r.of(10), "Process record is stopped")
    c.contains("plain record btrace picks pt", r.of(12),
               "Recording format: Intel Processor Trace.")
    c.contains("record btrace after stop: a fresh, empty trace", r.of(12),
               "Recorded 0 instructions in 0 functions (0 gaps)")
    c.contains("errors: program exits normally", r.of(15), "exited normally",
               r.transcript())


def main(args, c):
    check_errors(c, args)
    for opt in ("O0", "O2"):
        check_opt(c, args, opt)


if __name__ == "__main__":
    run_test("test_record_btrace", main)
